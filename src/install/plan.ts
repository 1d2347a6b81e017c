import { existsSync, readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { InstallDamagedError } from '../errors.js'
import { packageRoot } from '../package-root.js'

export type Platform = 'linux' | 'darwin'

export interface InstallInput {
  readonly platform: Platform
  /** A per-user service (systemd --user, LaunchAgent) instead of the system one. */
  readonly user: boolean
  readonly node: string
  readonly cli: string
  readonly config: string
  readonly folders: readonly string[]
  /** Where credential files are looked for, for LoadCredential= (system units). */
  readonly credentialsDir: string
  /** The state dir the config names; a system unit may write there besides its own StateDirectory=. */
  readonly stateDir?: string
  readonly home?: string
}

/** What installing means on this platform: a file to write, and the commands to run after. */
export interface InstallPlan {
  readonly path: string
  readonly content: string
  readonly commands: ReadonlyArray<readonly string[]>
  /** Commands to run once the file is written (install) or removed (uninstall). */
  readonly after?: ReadonlyArray<readonly string[]>
}

const CREDENTIALS = ['api-key', 'session-token', 'wallet-key'] as const

function template (relative: string): string {
  const path = new URL(relative, packageRoot())
  try {
    return readFileSync(path, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    throw new InstallDamagedError(`cidsync's install is damaged: ${decodeURIComponent(path.pathname)} is missing; install cidsync again`, { cause: err })
  }
}

const xml = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
// systemd unquotes its own way: paths with spaces are quoted, backslashes and quotes escaped.
const unitArg = (text: string): string => /[\s"\\]/.test(text) ? `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"` : text

export const SYSTEM_UNIT_PATH = '/etc/systemd/system/cidsync.service'
/** What the system unit's `StateDirectory=cidsync` gives the daemon. */
export const SYSTEM_STATE_DIR = '/var/lib/cidsync'
/** The user the system unit runs as. */
export const SERVICE_USER = 'cidsync'

/** The template's line for a marker, `# cidsync:NAME (...)`, replaced by the given lines (or dropped). */
function fillMarker (unit: string, name: string, lines: readonly string[]): string {
  return unit.replace(new RegExp(`^# cidsync:${name}\\b.*\\n`, 'm'), lines.map(l => `${l}\n`).join(''))
}

export const LAUNCH_AGENT_LABEL = 'com.cidsync.daemon'

/** The unit or plist for this install, with its absolute paths, and the commands that enable it. */
export function planInstall (input: InstallInput): InstallPlan {
  const home = input.home ?? homedir()
  if (input.platform === 'darwin') {
    const content = template('config/com.cidsync.daemon.plist')
      .replace('@NODE@', xml(input.node)).replace('@CLI@', xml(input.cli)).replace('@CONFIG@', xml(input.config))
      .replaceAll('@LOGS@', xml(join(home, 'Library', 'Logs')))
    const path = join(home, 'Library', 'LaunchAgents', `${LAUNCH_AGENT_LABEL}.plist`)
    return { path, content, commands: [['launchctl', 'bootstrap', `gui/${process.getuid?.() ?? 501}`, path]] }
  }
  const unit = input.user ? 'systemd/cidsync-user.service' : 'systemd/cidsync.service'
  const credentials = CREDENTIALS.filter(name => existsSync(join(input.credentialsDir, name)))
    .map(name => `LoadCredential=${name}:${join(input.credentialsDir, name)}`)
  const paths = input.folders.map(f => `ReadOnlyPaths=-${unitArg(f)}`)
  // ProtectSystem=strict leaves only StateDirectory= writable: a state dir elsewhere must be named.
  if (!input.user && input.stateDir !== undefined && input.stateDir !== SYSTEM_STATE_DIR) paths.push(`ReadWritePaths=${unitArg(input.stateDir)}`)
  const execStart = `ExecStart=${unitArg(input.node)} ${unitArg(input.cli)} daemon --config ${unitArg(input.config)}`
  let content = template(unit).replace(/^ExecStart=.*$/m, () => execStart)
  content = fillMarker(fillMarker(content, 'credentials', credentials), 'paths', paths)
  if (input.user) {
    return {
      path: join(home, '.config', 'systemd', 'user', 'cidsync.service'),
      content,
      commands: [['systemctl', '--user', 'daemon-reload'], ['systemctl', '--user', 'enable', '--now', 'cidsync.service']]
    }
  }
  return {
    path: SYSTEM_UNIT_PATH,
    content,
    commands: [
      ['sh', '-c', `id ${SERVICE_USER} >/dev/null 2>&1 || useradd --system --home-dir ${SYSTEM_STATE_DIR} --shell /usr/sbin/nologin ${SERVICE_USER}`],
      ['systemctl', 'daemon-reload'],
      ['systemctl', 'enable', '--now', 'cidsync.service']
    ]
  }
}

/** Stopping and removing what {@link planInstall} put in place. */
export function planUninstall (platform: Platform, user: boolean, home = homedir()): InstallPlan {
  if (platform === 'darwin') {
    const path = join(home, 'Library', 'LaunchAgents', `${LAUNCH_AGENT_LABEL}.plist`)
    return { path, content: '', commands: [['launchctl', 'bootout', `gui/${process.getuid?.() ?? 501}/${LAUNCH_AGENT_LABEL}`]] }
  }
  // daemon-reload runs after the file is gone, so systemd forgets the unit.
  if (user) {
    return { path: join(home, '.config', 'systemd', 'user', 'cidsync.service'), content: '', commands: [['systemctl', '--user', 'disable', '--now', 'cidsync.service']], after: [['systemctl', '--user', 'daemon-reload']] }
  }
  return { path: SYSTEM_UNIT_PATH, content: '', commands: [['systemctl', 'disable', '--now', 'cidsync.service']], after: [['systemctl', 'daemon-reload']] }
}
