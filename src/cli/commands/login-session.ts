import { readFileSync } from 'node:fs'
import type { Config } from '../../config/index.js'
import { Credential, credentialsDir, type ServiceConnection } from '../../connect/index.js'
import { RemoteNotFoundError } from '../../errors.js'
import { jwtClaims } from '../../util/jwt.js'

export interface LoginSession {
  /** Where the session token was saved, when it was. */
  readonly tokenPath?: string
  /** Where the wallet key is kept, when it is. */
  readonly walletPath?: string
  /** For stdout: what was saved. */
  readonly lines: string[]
  /** For stderr: what was left alone, or failed, and what to do. */
  readonly notes: string[]
}

/** The configured token's user, or why it cannot be read (then it is left alone). */
function configuredUser (credential: Credential): { user: string | undefined } | { unreadable: string } {
  try {
    const token = credential.value()
    return { user: token === undefined || token === '' ? undefined : jwtClaims(token)?.sub ?? '(no user)' }
  } catch (err) {
    return { unreadable: (err as Error).message }
  }
}

/** The wallet key kept beside the config, when it is the same key already (no rewrite, no note). */
function keptAlready (credential: Credential, text: string): boolean {
  try {
    return readFileSync(credential.path, 'utf8').trim().toLowerCase().replace(/^0x/, '') === text.trim().toLowerCase().replace(/^0x/, '')
  } catch {
    return false
  }
}

/**
 * After `cidsync login`: a self-hosted service also gives a session token for the wallet's
 * signature, so no token has to be carried from the service's machine. The wallet key is kept
 * (0600) beside the config so the daemon renews that token before it expires. A token set for
 * another user is left alone: replacing it would point this device at another user's snapshots.
 * Production issues no such tokens (a 404): nothing is saved, and nothing said but the usual hint.
 */
export async function sessionTokenByWallet (config: Config, connection: ServiceConnection, walletKey: Uint8Array, walletText: string, options: { readonly keepWallet: boolean }): Promise<LoginSession> {
  const dir = credentialsDir(config)
  let answer: { token: string, expiresAt: string }
  try {
    answer = await connection.clients.session.tokenBySignature(walletKey)
  } catch (err) {
    if (err instanceof RemoteNotFoundError) return { lines: [], notes: [] }
    return { lines: [], notes: [`no session token for this wallet from the service: ${(err as Error).message}`] }
  }
  const address = jwtClaims(answer.token)?.sub ?? ''
  const tokenCredential = new Credential('session-token', dir)
  const lines: string[] = []
  const notes: string[] = []
  let tokenPath: string | undefined
  const configured = configuredUser(tokenCredential)
  if ('unreadable' in configured) {
    notes.push(`the session token set now was left alone: ${configured.unreadable}`)
  } else if (configured.user !== undefined && configured.user.toLowerCase() !== address.toLowerCase()) {
    notes.push(`the session token set now names user ${configured.user}, not this wallet (${address}): left alone, and not renewed by itself. ` +
      `To use this wallet's, remove ${tokenCredential.path} (and CIDSYNC_SESSION_TOKEN) and run \`cidsync login\` again`)
  } else {
    tokenPath = tokenCredential.save(answer.token)
    lines.push(`session token saved to ${tokenPath} (valid until ${answer.expiresAt})\n`)
    if ((process.env.CIDSYNC_SESSION_TOKEN ?? '') !== '') notes.push(`CIDSYNC_SESSION_TOKEN is set, and it is used instead of ${tokenPath}: unset it`)
  }
  let walletPath: string | undefined
  if (options.keepWallet && tokenPath !== undefined) {
    const wallet = new Credential('wallet-key', dir)
    if (!keptAlready(wallet, walletText)) wallet.save(walletText.trim())
    walletPath = wallet.path
    lines.push(`wallet key kept in ${walletPath} (0600): the daemon renews the session token with it before it expires (--no-keep-wallet: not kept)\n`)
  } else if (tokenPath !== undefined) {
    notes.push('the wallet key was not kept (--no-keep-wallet): the session token is not renewed by itself, and status warns a week before it expires')
  }
  return { tokenPath, walletPath, lines, notes }
}
