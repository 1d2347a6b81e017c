/**
 * The expiry a JWT claims, read without checking its signature (only its issuer can): enough to
 * warn before a session token runs out. Undefined for anything that is not a JWT with `exp`.
 */
export function jwtExpiry (token: string | undefined): Date | undefined {
  const payload = token?.split('.')[1]
  if (payload === undefined) return undefined
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { exp?: unknown }
    return typeof claims.exp === 'number' ? new Date(claims.exp * 1000) : undefined
  } catch {
    return undefined
  }
}
