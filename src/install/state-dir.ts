import { parse } from 'smol-toml'
import { SERVICE_USER, SYSTEM_STATE_DIR } from './plan.js'

/**
 * The config text with `state_dir = "/var/lib/cidsync"` put first, or undefined when it names a
 * state dir already. Without it, the system daemon (systemd's `StateDirectory=`) and an
 * administrator's `cidsync ls --config ...` would each use a state dir of their own: a second
 * index, key and account.
 */
export function withSystemStateDir (text: string): string | undefined {
  const table = parse(text) as Record<string, unknown>
  if (table.state_dir !== undefined) return undefined
  return `# Added by \`cidsync service install\`: the daemon and \`sudo -u ${SERVICE_USER} cidsync ...\` share this state.\n` +
    `state_dir = ${JSON.stringify(SYSTEM_STATE_DIR)}\n\n${text}`
}
