import type Database from 'better-sqlite3'
import { HttpFailure } from './http.js'
import { Invitations } from './invitations.js'

const HOUR_MS = 3_600_000

/** Who may make an account (see `AccountPolicy.signup`). */
export type SignupPolicy = 'open' | 'allowlist' | 'invite' | 'closed'

export interface SignupRules {
  readonly signup: SignupPolicy
  /** Wallets `allowlist` lets in. */
  readonly allow: readonly string[]
  /** New accounts open sign-up makes in an hour; 0 or unset: no limit. */
  readonly signupsPerHour?: number
}

/**
 * Who may make an account. Each account has its own quota, so sign-up decides how much the
 * service can be made to hold: open sign-up is rate-bounded, and `invite` lets in only wallets
 * that bring a code the operator made.
 */
export class SignupGate {
  readonly invitations: Invitations
  private readonly hasAccount: Database.Statement
  private readonly madeSince: Database.Statement
  private readonly allowed: ReadonlySet<string>

  constructor (db: Database.Database, private readonly rules: SignupRules) {
    this.invitations = new Invitations(db)
    this.hasAccount = db.prepare('SELECT 1 FROM api_keys WHERE address = ? LIMIT 1').pluck()
    // An account's age is its first key's: another key for an old account is no sign-up.
    this.madeSince = db.prepare(`SELECT COUNT(*) AS made, MIN(first) AS oldest
      FROM (SELECT MIN(created_at) AS first FROM api_keys GROUP BY address) WHERE first > ?`)
    this.allowed = new Set(rules.allow.map(a => a.toLowerCase()))
  }

  /**
   * Before a message or a key is made: a wallet with an account may always go on; a new one only
   * as the policy says. `spend` (the key is made) uses the invitation up.
   */
  check (address: string, invite: string | undefined, spend = false): void {
    const { signup } = this.rules
    if (this.hasAccount.get(address) !== undefined) return
    if (signup === 'open') return this.checkRate()
    if (signup === 'allowlist' && this.allowed.has(address.toLowerCase())) return
    if (signup === 'invite') {
      if (spend ? this.invitations.spend(invite, address) : this.invitations.isOpen(invite)) return
      throw new HttpFailure(403, invite === undefined
        ? 'sign-up here needs an invitation: ask the operator for a code (`cidsync local-service invite`), then `cidsync login --invite CODE`'
        : 'this invitation is not valid: it was used, it expired, or it was never made here; ask the operator for a new one')
    }
    throw new HttpFailure(403, signup === 'closed'
      ? 'sign-up is closed on this service: its operator lets no new account in ([local_service] signup; a service listening beyond loopback is closed unless its operator opens it)'
      : 'this wallet may not sign up here: its operator lists the wallets that may ([local_service] allow)')
  }

  /** Open sign-up makes at most `signupsPerHour` accounts an hour: then a 429 until the oldest ages out. */
  private checkRate (): void {
    const max = this.rules.signupsPerHour ?? 0
    if (max <= 0) return
    const now = Date.now()
    const { made, oldest } = this.madeSince.get(now - HOUR_MS) as { made: number, oldest: number | null }
    if (made < max) return
    // A place frees when the oldest sign-up of the hour ages out.
    const seconds = Math.max(1, Math.ceil(((oldest ?? now) + HOUR_MS - now) / 1000))
    throw new HttpFailure(429, `${max} accounts were made here in the last hour, the most this service allows ([local_service] signup_rate_per_hour): try again in ${seconds} s`,
      { 'retry-after': String(seconds) })
  }
}
