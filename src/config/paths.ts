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

const set = (value: string | undefined): value is string => value !== undefined && value !== ''

/** macOS keeps an app's files under ~/Library/Application Support, unless XDG is set explicitly. */
function macSupport (home: string): string {
  return join(home, 'Library', 'Application Support', 'cidsync')
}

/** Where the state lives when the config does not say: systemd's, else XDG's (macOS: Application Support). */
export function defaultStateDir (env: NodeJS.ProcessEnv, home = homedir(), platform: NodeJS.Platform = process.platform): string {
  const systemd = firstOf(env.STATE_DIRECTORY)
  if (systemd !== undefined) return systemd
  if (set(env.XDG_STATE_HOME)) return join(env.XDG_STATE_HOME, 'cidsync')
  return platform === 'darwin' ? join(macSupport(home), 'state') : join(home, '.local', 'state', 'cidsync')
}

/** Where `cidsync init` writes and where the config is looked for when neither flag nor env names one. */
export function defaultConfigPath (env: NodeJS.ProcessEnv, home = homedir(), platform: NodeJS.Platform = process.platform): string {
  const systemd = firstOf(env.CONFIGURATION_DIRECTORY)
  if (systemd !== undefined) return join(systemd, 'config.toml')
  if (set(env.XDG_CONFIG_HOME)) return join(env.XDG_CONFIG_HOME, 'cidsync', 'config.toml')
  return platform === 'darwin' ? join(macSupport(home), 'config.toml') : join(home, '.config', 'cidsync', 'config.toml')
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
