import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'

/** How long a session token lives when its issuer says nothing: 30 days. */
export const DEFAULT_SESSION_TOKEN_TTL_SECONDS = 30 * 86_400

/** Session tokens for the pointer service: HS256 JWTs signed with the service's own secret. */
export class TokenIssuer {
  constructor (private readonly secret: Buffer) {}

  static newSecret (): string {
    return randomBytes(32).toString('base64url')
  }

  issue (user: string, ttlSeconds: number, now = Date.now()): string {
    const header = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url')
    const iat = Math.floor(now / 1000)
    const payload = Buffer.from(JSON.stringify({ sub: user, iat, exp: iat + ttlSeconds, iss: 'cidsync-local-service' })).toString('base64url')
    return `${header}.${payload}.${this.sign(`${header}.${payload}`)}`
  }

  /** The token's user, or undefined if its signature, shape or expiry is wrong. */
  verify (token: string, now = Date.now()): string | undefined {
    const [header, payload, signature, extra] = token.split('.')
    if (header === undefined || payload === undefined || signature === undefined || extra !== undefined) return undefined
    const expected = Buffer.from(this.sign(`${header}.${payload}`))
    const given = Buffer.from(signature)
    if (expected.byteLength !== given.byteLength || !timingSafeEqual(expected, given)) return undefined
    try {
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { sub?: unknown, exp?: unknown }
      if (typeof claims.sub !== 'string' || typeof claims.exp !== 'number' || claims.exp * 1000 <= now) return undefined
      return claims.sub
    } catch {
      return undefined
    }
  }

  private sign (input: string): string {
    return createHmac('sha256', this.secret).update(input).digest('base64url')
  }
}
