import { readFileSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import type { Config } from '../config/index.js'
import { defaultConfigPath } from '../config/index.js'
import { ConfigError } from '../errors.js'
import { writeFileAtomicSync } from '../util/atomic-write.js'

/** `wallet-key`: kept by `cidsync login` against a self-hosted service, to renew the session token. */
export type CredentialName = 'api-key' | 'session-token' | 'wallet-key'

const ENV: Record<CredentialName, string> = { 'api-key': 'CIDSYNC_API_KEY', 'session-token': 'CIDSYNC_SESSION_TOKEN', 'wallet-key': 'CIDSYNC_WALLET_KEY' }

/** Where `cidsync login` saves credentials: beside the config file. */
export function credentialsDir (config: Config, env: NodeJS.ProcessEnv = process.env): string {
  return dirname(config.source ?? defaultConfigPath(env))
}

/**
 * One credential, from the first of: its environment variable, `$CREDENTIALS_DIRECTORY/<name>`
 * (systemd's LoadCredential), `<config dir>/<name>` (0600). A file is read again when it changes,
 * so a renewed token is used without a restart.
 */
export class Credential {
  private cached: { path: string, stamp: string, value: string } | undefined

  /** `file`: the file's name in `dir`, when not the credential's own (a renewed token in the state dir). */
  constructor (readonly name: CredentialName, private readonly dir: string, private readonly env: NodeJS.ProcessEnv = process.env, private readonly file: string = name) {}

  /** Where a saved credential goes. */
  get path (): string {
    return join(this.dir, this.file)
  }

  /** Which source holds it now, for messages: a variable, a file, or nothing. */
  source (): string | undefined {
    if ((this.env[ENV[this.name]] ?? '') !== '') return ENV[this.name]
    return this.files().find(path => statSync(path, { throwIfNoEntry: false }) !== undefined)
  }

  value (): string | undefined {
    const fromEnv = this.env[ENV[this.name]]
    if (fromEnv !== undefined && fromEnv !== '') return fromEnv.trim()
    for (const path of this.files()) {
      const stats = statSync(path, { throwIfNoEntry: false })
      if (stats === undefined) continue
      // Not the mtime alone: two saves within one tick of a coarse file system clock share it. A save
      // renames a new file into place, so its inode tells them apart.
      const stamp = `${stats.ino}:${stats.size}:${stats.mtimeMs}:${stats.ctimeMs}`
      if (this.cached?.path === path && this.cached.stamp === stamp) return this.cached.value
      if (path === this.path && (stats.mode & 0o077) !== 0) {
        throw new ConfigError(`${path} is readable by others (mode ${(stats.mode & 0o777).toString(8)}): run \`chmod 600 ${path}\``)
      }
      const value = readFileSync(path, 'utf8').trim()
      this.cached = { path, stamp, value }
      return value
    }
    return undefined
  }

  /** Saves it as a 0600 file in the config dir (crash-safe). */
  save (value: string): string {
    writeFileAtomicSync(this.path, `${value}\n`, { mode: 0o600 })
    this.cached = undefined
    return this.path
  }

  private files (): string[] {
    const systemd = this.env.CREDENTIALS_DIRECTORY
    return [...(systemd !== undefined && systemd !== '' ? [join(systemd, this.name)] : []), this.path]
  }
}
