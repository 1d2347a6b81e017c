import { homedir } from 'node:os'
import { isAbsolute, join, resolve } from 'node:path'

/** `~` and `~/x` to the home directory; other paths untouched. */
export function expandHome (path: string, home = homedir()): string {
  if (path === '~') return home
  if (path.startsWith('~/')) return join(home, path.slice(2))
  return path
}

/** A path from config: `~` expanded, then relative paths taken from `base` (the config file's folder). */
export function resolveConfigPath (path: string, base: string, home?: string): string {
  const expanded = expandHome(path, home)
  return isAbsolute(expanded) ? expanded : resolve(base, expanded)
}

function firstOf (list: string | undefined): string | undefined {
  // systemd passes one entry per directory it made, separated by colons.
  const first = list?.split(':')[0]
  return first === undefined || first === '' ? undefined : first
}

/** Where the state lives when the config does not say: systemd's, else XDG's. */
export function defaultStateDir (env: NodeJS.ProcessEnv, home = homedir()): string {
  return firstOf(env.STATE_DIRECTORY) ??
    join(env.XDG_STATE_HOME !== undefined && env.XDG_STATE_HOME !== '' ? env.XDG_STATE_HOME : join(home, '.local', 'state'), 'cidsync')
}

/** Where `cidsync init` writes and where the config is looked for when neither flag nor env names one. */
export function defaultConfigPath (env: NodeJS.ProcessEnv, home = homedir()): string {
  const systemd = firstOf(env.CONFIGURATION_DIRECTORY)
  if (systemd !== undefined) return join(systemd, 'config.toml')
  const base = env.XDG_CONFIG_HOME !== undefined && env.XDG_CONFIG_HOME !== '' ? env.XDG_CONFIG_HOME : join(home, '.config')
  return join(base, 'cidsync', 'config.toml')
}

/** The system-wide config, used when the user has none. */
export const SYSTEM_CONFIG_PATH = '/etc/cidsync/config.toml'

/** `listen = "unix:"`: systemd's runtime dir, else `$XDG_RUNTIME_DIR/cidsync`, else the state dir. */
export function defaultSocketPath (env: NodeJS.ProcessEnv, stateDir: string): string {
  const systemd = firstOf(env.RUNTIME_DIRECTORY)
  if (systemd !== undefined) return join(systemd, 'status.sock')
  if (env.XDG_RUNTIME_DIR !== undefined && env.XDG_RUNTIME_DIR !== '') return join(env.XDG_RUNTIME_DIR, 'cidsync', 'status.sock')
  return join(stateDir, 'status.sock')
}
