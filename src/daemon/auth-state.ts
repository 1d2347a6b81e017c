import type { ServiceConnection } from '../connect/index.js'
import { jwtExpiry } from '../util/jwt.js'
import { safely } from './service-link.js'
import type { StatusDocument } from './status-document.js'

/** Warn this long before the session token expires. */
const TOKEN_WARNING_MS = 86_400_000

/** /status's `auth`: which credentials are there, and when the session token expires (with a warning when it is near). */
export function authState (connection: ServiceConnection | undefined): StatusDocument['auth'] {
  const token = safely(connection?.credentials.sessionToken)
  const expiry = jwtExpiry(token)
  const left = expiry === undefined ? undefined : expiry.getTime() - Date.now()
  const warning = left === undefined
    ? (connection !== undefined && token === undefined ? 'no session token: the pointer service cannot be reached' : null)
    : left <= 0
      ? `the session token expired at ${expiry?.toISOString() ?? ''}: publishing is stopped until a new one is given`
      // The embedded service's token renews itself: nothing for the user to do.
      : left < TOKEN_WARNING_MS && connection?.mode !== 'embedded' ? `the session token expires at ${expiry?.toISOString() ?? ''}: renew it` : null
  return {
    apiKey: safely(connection?.credentials.apiKey) === undefined ? 'missing' : 'present',
    sessionToken: { present: token !== undefined, expiresAt: expiry?.toISOString() ?? null, warning }
  }
}
