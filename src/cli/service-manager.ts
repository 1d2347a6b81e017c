import { spawnSync } from 'node:child_process'
import { ServiceManagerError } from '../errors.js'

/** A command line as a shell user would type it. */
export function showCommands (commands: ReadonlyArray<readonly string[]>): string {
  return commands.map(c => c.map(a => /[\s'"]/.test(a) ? `'${a.replace(/'/g, '\'\\\'\'')}'` : a).join(' ')).join('\n')
}

const NO_USER_MANAGER_HINT = 'there is no systemd user manager for this login (common over su, sudo -u, a container or a plain ssh without a user session): ' +
  'log in as that user through a session that starts one (or run `loginctl enable-linger USER` as root, then log in again), ' +
  'or install the system service instead (`sudo cidsync service install`)'

/** What a failed spawn or exit said, in one line. */
function failureOf (command: readonly string[], result: ReturnType<typeof spawnSync>): string | undefined {
  const shown = showCommands([command])
  if (result.error !== undefined) {
    const code = (result.error as NodeJS.ErrnoException).code
    return code === 'ENOENT' ? `${command[0] ?? ''} is not installed (${shown})` : `${shown} could not run: ${result.error.message}`
  }
  if (result.status === 0) return undefined
  const said = result.stderr?.toString().trim().split('\n').filter(l => l !== '').slice(-3).join('; ') ?? ''
  return `${shown} exited ${result.status ?? result.signal ?? '?'}${said === '' ? '' : `: ${said}`}`
}

/**
 * Answers why `systemctl --user` cannot be used, or undefined when a user manager answers. Asked
 * before anything is written, so a refused install leaves no unit file behind.
 */
export function userManagerProblem (): string | undefined {
  const probe = ['systemctl', '--user', 'show-environment']
  const failure = failureOf(probe, spawnSync(probe[0] as string, probe.slice(1), { stdio: ['ignore', 'ignore', 'pipe'], timeout: 15_000 }))
  return failure === undefined ? undefined : `${failure}: ${NO_USER_MANAGER_HINT}`
}

/**
 * Runs each command, printing it first; the first that fails throws a {@link ServiceManagerError}
 * naming it, its exit status, the last of what it said, and `advice`.
 */
export function runCommands (commands: ReadonlyArray<readonly string[]>, advice: string): void {
  for (const command of commands) {
    process.stdout.write(`$ ${showCommands([command])}\n`)
    const result = spawnSync(command[0] as string, command.slice(1), { stdio: ['ignore', 'inherit', 'pipe'], timeout: 120_000 })
    if (result.stderr !== null && result.stderr.byteLength > 0) process.stderr.write(result.stderr)
    const failure = failureOf(command, result)
    if (failure !== undefined) throw new ServiceManagerError(`${failure}; ${advice}`)
  }
}
