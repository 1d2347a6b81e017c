import { parseWalletKey, walletAddress } from '../crypto/index.js'
import { RemoteNotFoundError } from '../errors.js'
import { backoffMs, type Backoff } from '../util/backoff.js'
import { jwtClaims } from '../util/jwt.js'
import { Credential } from './credentials.js'
import { STATE_NAMES } from '../config/index.js'

/** Where a renewed session token is kept: the state dir, which the daemon may always write. */
export const RENEWED_TOKEN_FILE = STATE_NAMES.renewedSessionToken

/** Days before expiry that status warns, and `status --check` fails when nothing renews the token. */
export const TOKEN_WARNING_DAYS = 7
const DAY_MS = 86_400_000

/** After a failed renewal: a minute, doubling up to six hours. */
export const RENEWAL_BACKOFF: Backoff = { firstMs: 60_000, maxMs: 6 * 3_600_000, jitter: 'spread' }

/**
 * Where renewal stands. `waiting`: not due yet (`renewAt`); `renewed`: the last try worked;
 * `failing`: the last try failed, tried again at `nextAttemptAt`; `unavailable`: nothing can renew
 * it here (`why` says what to do); `none`: no token, or not one cidsync can read.
 */
export interface RenewalState {
  readonly state: 'none' | 'waiting' | 'renewed' | 'failing' | 'unavailable'
  readonly renewAt: string | null
  readonly nextAttemptAt: string | null
  readonly renewedAt: string | null
  readonly failures: number
  readonly lastError: { readonly at: string, readonly message: string, readonly code: string } | null
  readonly why: string | null
}

export interface TokenRenewalInit {
  /** The token the user gave (variable, systemd credential or file beside the config). */
  readonly configured: () => string | undefined
  /** The wallet key, when one is kept (`cidsync login` against a self-hosted service keeps it). */
  readonly walletKey: () => string | undefined
  readonly stateDir: string
  /** Trades the wallet's signature for a new token (the service's `create_session_token`). */
  readonly request: (walletKey: Uint8Array, expiresAfter: Date, signal?: AbortSignal) => Promise<{ token: string }>
  /** The clock, injected by tests. */
  readonly now?: () => number
  readonly backoff?: Backoff
  readonly random?: () => number
}

/**
 * A self-hosted service's session token, renewed with the wallet's signature before it expires,
 * so a device keeps publishing without anyone carrying a new token from the service's machine.
 * A renewed token is kept in the state dir and used while it names the same user as the
 * configured one and outlives it: a token the user changes to another user always wins.
 */
export class TokenRenewal {
  private readonly renewed: Credential
  private readonly now: () => number
  private failures = 0
  private nextAttemptAt = 0
  private renewedAt: number | undefined
  private lastError: RenewalState['lastError'] = null
  private unavailable: string | undefined

  constructor (private readonly init: TokenRenewalInit) {
    this.renewed = new Credential('session-token', init.stateDir, {}, RENEWED_TOKEN_FILE)
    this.now = init.now ?? Date.now
  }

  /** The token to send: the renewed one while it is for the same user and lasts longer. */
  current (): string | undefined {
    const configured = this.init.configured()
    if (configured === undefined || configured === '') return configured
    let renewed: string | undefined
    try {
      renewed = this.renewed.value()
    } catch {
      // A renewed token others could read is not used; the next renewal replaces it.
      renewed = undefined
    }
    const mine = jwtClaims(configured)
    const theirs = jwtClaims(renewed)
    if (renewed === undefined || mine?.sub === undefined || theirs?.sub?.toLowerCase() !== mine.sub.toLowerCase()) return configured
    return (theirs.exp?.getTime() ?? 0) > (mine.exp?.getTime() ?? Infinity) ? renewed : configured
  }

  /** When the token in use should be renewed: at half its life, and no later than a day before the warning. */
  renewAt (): number | undefined {
    const claims = jwtClaims(this.current())
    if (claims?.exp === undefined) return undefined
    const exp = claims.exp.getTime()
    const half = claims.iat === undefined ? exp - 15 * DAY_MS : (claims.iat.getTime() + exp) / 2
    return Math.min(half, exp - (TOKEN_WARNING_DAYS + 1) * DAY_MS)
  }

  /** When the next try is worth making (for the daemon's timer): due now, after a backoff, or at `renewAt`. */
  nextCheckAt (): number | undefined {
    const at = this.renewAt()
    return at === undefined ? undefined : Math.max(at, this.nextAttemptAt)
  }

  /**
   * Renews the token if it is due and no backoff holds it. Never throws: a failure is counted,
   * kept for status, and tried again after a growing wait. Answers what happened. `signal`
   * (the daemon stopping) ends a request in flight; that is not counted as a failure.
   */
  async tick (signal?: AbortSignal): Promise<'renewed' | 'failed' | 'not-due' | 'unavailable'> {
    const now = this.now()
    this.unavailable = undefined
    let token: string | undefined
    try {
      token = this.current()
    } catch (err) {
      this.unavailable = (err as Error).message
      return 'unavailable'
    }
    const claims = jwtClaims(token)
    const renewAt = this.renewAt()
    if (token === undefined || token === '' || claims?.exp === undefined || renewAt === undefined) return 'not-due'
    if (now < renewAt || now < this.nextAttemptAt) return 'not-due'
    let keyText: string | undefined
    try {
      keyText = this.init.walletKey()
    } catch (err) {
      this.unavailable = `${(err as Error).message}: the session token cannot be renewed until then`
      return 'unavailable'
    }
    if (keyText === undefined || keyText === '') {
      this.unavailable = 'no wallet key is kept to renew it: run `cidsync login --wallet-key-file F` (a self-hosted service), or give a new token by hand'
      return 'unavailable'
    }
    let key: Uint8Array
    try {
      key = parseWalletKey(keyText)
    } catch (err) {
      this.unavailable = `the kept wallet key cannot be read (${(err as Error).message}): run \`cidsync login --wallet-key-file F\` again`
      return 'unavailable'
    }
    const address = walletAddress(key).toLowerCase()
    if (claims.sub?.toLowerCase() !== address) {
      this.unavailable = `the session token names user ${claims.sub ?? '(none)'}, not this wallet (${address}): a renewed one would point at another user's snapshots, so it is renewed only by hand`
      return 'unavailable'
    }
    try {
      // The client checks the answer names this wallet and outlives the token it replaces.
      const { token: fresh } = await this.init.request(key, claims.exp, signal)
      this.renewed.save(fresh)
      this.failures = 0
      this.nextAttemptAt = 0
      this.lastError = null
      this.renewedAt = this.now()
      return 'renewed'
    } catch (err) {
      if (signal?.aborted === true) return 'not-due'
      this.failures++
      this.nextAttemptAt = this.now() + backoffMs(this.init.backoff ?? RENEWAL_BACKOFF, this.failures, this.init.random)
      const message = err instanceof RemoteNotFoundError
        ? 'the service issues no session tokens for a signature (production\'s come from its dashboard): copy a new one into the session-token credential by hand'
        : (err as Error).message
      this.lastError = { at: new Date(this.now()).toISOString(), message, code: (err as { code?: string }).code ?? 'ERR_CIDSYNC' }
      return 'failed'
    }
  }

  state (): RenewalState {
    const renewAt = this.renewAt()
    const iso = (ms: number | undefined): string | null => ms === undefined || ms === 0 ? null : new Date(ms).toISOString()
    const base = { renewAt: iso(renewAt), nextAttemptAt: this.lastError === null ? null : iso(this.nextAttemptAt), renewedAt: iso(this.renewedAt), failures: this.failures, lastError: this.lastError }
    if (this.unavailable !== undefined) return { ...base, state: 'unavailable', why: this.unavailable }
    if (renewAt === undefined) return { ...base, state: 'none', why: null }
    if (this.lastError !== null) return { ...base, state: 'failing', why: null }
    return { ...base, state: this.renewedAt === undefined ? 'waiting' : 'renewed', why: null }
  }
}
