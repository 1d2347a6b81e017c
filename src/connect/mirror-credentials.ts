import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Config, MirrorConfig } from '../config/index.js'
import { STATE_NAMES } from '../config/index.js'
import { MirrorCredentialUnboundError } from '../errors.js'
import type { CredentialHints } from '../remote/index.js'
import { writeFileAtomicSync } from '../util/atomic-write.js'
import { makeDirsSync } from '../util/make-dirs.js'
import { Credential } from './credentials.js'

/** Where a mirror's credentials live: `<state dir>/mirrors/<name>/` (0700; files 0600). */
export function mirrorCredentialsDir (config: Config, name: string): string {
  return join(config.stateDir, STATE_NAMES.mirrors, name)
}

const BINDING = 'bound-to'

/** The URLs a credential goes to: saved beside it at login, compared before each use. */
function bindingOf (mirror: MirrorConfig): string {
  return JSON.stringify({ deal: mirror.dealUrl, api: mirror.apiUrl, pointer: mirror.pointerUrl, upload: mirror.uploadUrl })
}

/**
 * A mirror's credential, read only while the config names the same URLs it was saved for:
 * pointed elsewhere (an edited config, a typo), it is never sent, and the request fails saying
 * to sign in again. No environment variable or systemd credential stands in: those are the primary's.
 */
export function boundCredential (config: Config, mirror: MirrorConfig, name: 'api-key' | 'session-token'): () => string | undefined {
  const dir = mirrorCredentialsDir(config, mirror.name)
  const credential = new Credential(name, dir, {})
  return () => {
    const value = credential.value()
    if (value === undefined) return undefined
    let bound: string | undefined
    try {
      bound = readFileSync(join(dir, BINDING), 'utf8').trim()
    } catch { /* none: as good as another URL */ }
    if (bound !== bindingOf(mirror)) {
      throw new MirrorCredentialUnboundError(`mirror ${mirror.name}'s saved ${name} (${credential.path}) was not signed in at the URLs the config names now, so it is not sent: run \`cidsync login --mirror ${mirror.name}\` again`)
    }
    return value
  }
}

/** Saves credentials for a mirror (0600, in a 0700 dir), bound to the URLs the config names now. */
export function saveMirrorCredentials (config: Config, mirror: MirrorConfig, values: { readonly apiKey?: string, readonly sessionToken?: string }): string[] {
  const dir = mirrorCredentialsDir(config, mirror.name)
  makeDirsSync(dir, 0o700)
  const saved: string[] = []
  if (values.apiKey !== undefined) saved.push(new Credential('api-key', dir, {}).save(values.apiKey))
  if (values.sessionToken !== undefined) saved.push(new Credential('session-token', dir, {}).save(values.sessionToken))
  writeFileAtomicSync(join(dir, BINDING), `${bindingOf(mirror)}\n`, { mode: 0o600 })
  return saved
}

/**
 * What a mirror's 401 says to do: sign in to that mirror. The primary's advice (`cidsync login`,
 * CIDSYNC_API_KEY, the session-token file beside the config) would change nothing for it.
 */
export function mirrorHints (name: string): CredentialHints {
  const login = `cidsync login --mirror ${name}`
  const token = `\`${login} --session-token-file T\` with a token from the mirror's identity provider (self-hosted: \`cidsync local-service token --dir D --user U\`, D being the mirror's directory)`
  return {
    apiKey: {
      refused: `mirror ${name} refused its API key: sign in to it again, \`${login} --wallet-key-file F\``,
      missing: `no API key is saved for mirror ${name}: sign in to it, \`${login} --wallet-key-file F\` (docs/mirrors.md)`
    },
    sessionToken: {
      refused: `mirror ${name} refused its session token, or it expired: save a new one, ${token}`,
      missing: `no session token is saved for mirror ${name}: save one, ${token} (docs/mirrors.md)`
    }
  }
}
