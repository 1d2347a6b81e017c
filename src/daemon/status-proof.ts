import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'

/**
 * Proof of holding the status token without sending it. Whatever listens on the status port may
 * not be the daemon (it was stopped, and another local user's program took the port): a CLI that
 * sent `Authorization: Bearer <token>` would hand it the token. Instead:
 *
 * 1. the CLI asks `GET /auth-challenge?client=<its random nonce>`, unauthenticated;
 * 2. the daemon answers a fresh single-use nonce of its own and HMAC(token, both nonces): the
 *    CLI checks that, so a listener that does not hold the token is caught before anything else;
 * 3. the CLI sends `Authorization: CidsyncProof nonce=<the daemon's nonce>, mac=<HMAC(token,
 *    method, path and query, nonce)>`: bound to that one request and usable once, it is worth
 *    nothing to whoever records it.
 */
export const PROOF_SCHEME = 'CidsyncProof'
export const CHALLENGE_PATH = '/auth-challenge'

/** How long a daemon nonce may wait for its request, and how many may be outstanding. */
const CHALLENGE_TTL_MS = 60_000
const MAX_OUTSTANDING = 1024
const NONCE = /^[A-Za-z0-9_-]{16,128}$/

function mac (token: string, parts: readonly string[]): string {
  return createHmac('sha256', token).update(parts.join('\n')).digest('base64url')
}

function same (a: string, b: string): boolean {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.byteLength === y.byteLength && timingSafeEqual(x, y)
}

/** A random nonce in the form challenges take. */
export function newNonce (): string {
  return randomBytes(24).toString('base64url')
}

/** What the daemon answers to a challenge: it holds the token, for this client nonce and its own. */
export function daemonProof (token: string, clientNonce: string, nonce: string): string {
  return mac(token, ['cidsync-daemon-v1', clientNonce, nonce])
}

/** Does `proof` show the answerer holds `token`? */
export function isDaemonProof (token: string, clientNonce: string, nonce: string, proof: string): boolean {
  return NONCE.test(nonce) && same(daemonProof(token, clientNonce, nonce), proof)
}

/** The `Authorization` value for one request (`pathAndQuery` as sent, e.g. `/snapshot?confirmDrop=1`). */
export function proofHeader (token: string, method: string, pathAndQuery: string, nonce: string): string {
  return `${PROOF_SCHEME} nonce=${nonce}, mac=${mac(token, ['cidsync-request-v1', method.toUpperCase(), pathAndQuery, nonce])}`
}

/** The daemon's side: issues nonces and accepts each proof once, for the request it was made for. */
export class ChallengeIssuer {
  /** Outstanding nonces and when each expires, oldest first. */
  private readonly outstanding = new Map<string, number>()

  constructor (private readonly token: string) {}

  /** A fresh nonce with the daemon's proof, or undefined for a client nonce not in the expected form. */
  issue (clientNonce: string, now = Date.now()): { nonce: string, proof: string } | undefined {
    if (!NONCE.test(clientNonce)) return undefined
    for (const [nonce, expires] of this.outstanding) {
      if (expires > now && this.outstanding.size < MAX_OUTSTANDING) break
      this.outstanding.delete(nonce)
    }
    const nonce = newNonce()
    this.outstanding.set(nonce, now + CHALLENGE_TTL_MS)
    return { nonce, proof: daemonProof(this.token, clientNonce, nonce) }
  }

  /** Is `header` a proof for this request, on a nonce issued here and not used yet? The nonce is spent either way. */
  verify (header: string | undefined, method: string, pathAndQuery: string, now = Date.now()): boolean {
    const match = new RegExp(`^${PROOF_SCHEME} nonce=([A-Za-z0-9_-]+), mac=([A-Za-z0-9_-]+)$`).exec(header ?? '')
    if (match === null) return false
    const nonce = match[1] as string
    const expires = this.outstanding.get(nonce)
    if (expires === undefined) return false
    this.outstanding.delete(nonce)
    return expires > now && same(proofHeader(this.token, method, pathAndQuery, nonce), header as string)
  }
}
