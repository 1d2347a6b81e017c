import { TOKEN_WARNING_DAYS, type RenewalState, type ServiceConnection } from '../connect/index.js'
import { jwtExpiry } from '../util/jwt.js'
import { safely } from './service-link.js'
import type { StatusDocument } from './status-document.js'

const DAY_MS = 86_400_000

/** What the renewal says, after "the session token expires at ...". */
function renewalWords (renewal: RenewalState | null): string {
  if (renewal === null) return 'renew it'
  if (renewal.state === 'unavailable') return `it is not renewed by itself: ${renewal.why ?? ''}`
  if (renewal.state === 'failing' && renewal.lastError !== null) {
    return `renewing it failed ${renewal.failures === 1 ? 'once' : `${renewal.failures} times`} (last at ${renewal.lastError.at}: ${renewal.lastError.message} [${renewal.lastError.code}]); ` +
      `tried again at ${renewal.nextAttemptAt ?? '?'}, or run \`cidsync login --wallet-key-file F\``
  }
  return 'it is being renewed with the wallet key'
}

/**
 * /status's `auth`: which credentials are there, when the session token expires, whether it is
 * renewed, and a warning {@link TOKEN_WARNING_DAYS} days ahead. `problem` (for `status --check`):
 * the token expired, or expires within those days and nothing renews it.
 */
export function authState (connection: Pick<ServiceConnection, 'mode' | 'credentials' | 'renewal'> | undefined, now = Date.now()): StatusDocument['auth'] {
  const token = safely(connection?.credentials.sessionToken)
  const expiry = jwtExpiry(token)
  const left = expiry === undefined ? undefined : expiry.getTime() - now
  // The embedded service's token renews itself in-process: nothing for the user to do.
  const embedded = connection?.mode === 'embedded'
  const renewal = embedded ? null : connection?.renewal?.state() ?? null
  const soon = left !== undefined && left > 0 && left < TOKEN_WARNING_DAYS * DAY_MS && !embedded
  const at = expiry?.toISOString() ?? ''
  let warning: string | null = null
  let problem: string | null = null
  if (left === undefined) {
    warning = connection !== undefined && token === undefined ? 'no session token: the pointer service cannot be reached' : null
  } else if (left <= 0) {
    warning = `the session token expired at ${at}: publishing is stopped until a new one is given${renewal === null ? '' : ` (${renewalWords(renewal)})`}`
    problem = warning
  } else if (soon) {
    const days = Math.max(1, Math.round(left / DAY_MS))
    warning = `the session token expires at ${at} (in ${days === 1 ? 'a day or less' : `about ${days} days`}): ${renewalWords(renewal)}`
    if (renewal === null || renewal.state === 'failing' || renewal.state === 'unavailable') problem = `${warning}; publishing stops then`
  } else if (renewal?.state === 'failing' || renewal?.state === 'unavailable') {
    // Said before the week's warning, so a failure is seen while there is time; not a problem yet.
    warning = `the session token expires at ${at}: ${renewalWords(renewal)}; \`status --check\` fails from ${TOKEN_WARNING_DAYS} days before`
  }
  return {
    apiKey: safely(connection?.credentials.apiKey) === undefined ? 'missing' : 'present',
    sessionToken: { present: token !== undefined, expiresAt: expiry?.toISOString() ?? null, warning, problem, renewal }
  }
}
