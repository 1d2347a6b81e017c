/** What a JWT claims that cidsync reads: its subject, when it was issued, when it expires. */
export interface JwtClaims {
  readonly sub: string | undefined
  readonly iat: Date | undefined
  readonly exp: Date | undefined
}

/**
 * The claims of a JWT, read without checking its signature (only its issuer can): enough to warn
 * before a session token runs out and to renew it for the same user. Undefined for anything that
 * is not a JWT with a JSON payload.
 */
export function jwtClaims (token: string | undefined): JwtClaims | undefined {
  const payload = token?.split('.')[1]
  if (payload === undefined) return undefined
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { sub?: unknown, iat?: unknown, exp?: unknown }
    if (claims === null || typeof claims !== 'object') return undefined
    const time = (value: unknown): Date | undefined => typeof value === 'number' && Number.isFinite(value) ? new Date(value * 1000) : undefined
    return { sub: typeof claims.sub === 'string' ? claims.sub : undefined, iat: time(claims.iat), exp: time(claims.exp) }
  } catch {
    return undefined
  }
}

/** The expiry a JWT claims; undefined for anything that is not a JWT with `exp`. */
export function jwtExpiry (token: string | undefined): Date | undefined {
  return jwtClaims(token)?.exp
}
