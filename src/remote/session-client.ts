import { z } from 'zod'
import { personalSign, walletAddress } from '../crypto/index.js'
import { RemoteResponseError, RemoteUnauthorizedError } from '../errors.js'
import { jwtClaims } from '../util/jwt.js'
import type { HttpClient } from './http-client.js'
import type { CallOptions } from './deals-client.js'

const answer = z.object({ token: z.string().min(1).max(8_192), expiresAt: z.string().max(64) })
/**
 * The only text a renewal signs, unattended: the service's sign-in message. Any other (another
 * service's sign-in, relayed by a hostile one) is refused unsigned.
 */
const SIGN_IN_MESSAGE = /^Please prove you are the owner of this wallet by signing this message, nonce=\d{1,40}$/

/**
 * Session tokens for a wallet's signature, from a self-hosted `cidsync local-service` (its
 * pointer service's base URL). Production's come from its dashboard: there the route is a 404,
 * which the caller reads as "not offered here".
 */
export class SessionClient {
  constructor (private readonly http: HttpClient) {}

  /**
   * Asks for a sign-in message, signs it, trades it for a token. A message is single use: when a
   * retried exchange is refused (used, its answer lost) the flow runs once more with a fresh one.
   */
  async tokenBySignature (walletKey: Uint8Array, options: CallOptions & { readonly expiresAfter?: Date } = {}): Promise<{ token: string, expiresAt: string }> {
    const address = walletAddress(walletKey)
    for (let round = 1; ; round++) {
      const message = await this.http.json({ method: 'GET', path: '/api/v1/user/get_auth_message', query: { publicKey: address }, auth: false, signal: options.signal }, z.string().regex(SIGN_IN_MESSAGE, 'not the sign-in message this device signs'))
      // In the body, not the URL: errors and logs name the URL, and the signature must not be read there.
      const request = { method: 'POST', path: '/api/v1/user/create_session_token', json: { publicKey: address, signature: personalSign(message, walletKey) }, auth: false, signal: options.signal } as const
      try {
        const got = await this.http.json(request, answer)
        // A token for another user would point this device at another user's snapshots.
        const claims = jwtClaims(got.token)
        const after = options.expiresAfter ?? new Date()
        if (claims?.sub?.toLowerCase() !== address.toLowerCase() || claims.exp === undefined || claims.exp <= after) {
          throw new RemoteResponseError(this.http.context(request), `the token answered names ${claims?.sub ?? 'no user'} and expires ${claims?.exp?.toISOString() ?? 'never'}: expected one for ${address} expiring after ${after.toISOString()}`)
        }
        return got
      } catch (err) {
        if (round >= 2 || !(err instanceof RemoteUnauthorizedError) || err.status === 403) throw err
      }
    }
  }
}
