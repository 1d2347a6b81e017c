import type Database from 'better-sqlite3'
import { HttpFailure } from './http.js'

/**
 * Who may make an account, and how much each may hold. Anyone who reaches a self-hosted service
 * (any local user, on loopback) could otherwise sign up, fill its disk and make keys without end.
 */
export interface AccountPolicy {
  /**
   * `open`: any wallet; `allowlist`: only those in `allow`; `closed`: no new account (those made
   * keep working). Unset: {@link defaultSignup} of the address it listens on.
   */
  readonly signup?: SignupPolicy
  /** Wallet addresses (0x…) that may sign up under `allowlist`. */
  readonly allow: readonly string[]
  /** The bytes of uploads one account may hold; 0: no limit. */
  readonly maxBytesPerAccount: number
  /** The IPNS keys one account may hold; 0: no limit. */
  readonly maxIpnsKeysPerAccount: number
}

export type SignupPolicy = 'open' | 'allowlist' | 'closed'

/**
 * Sign-up when the operator chose none: open on loopback, where only this machine's users reach
 * it (the quick start and the embedded service need no setting), closed on any other address,
 * where anyone on the network could make an account and fill its disk.
 */
export function defaultSignup (host: string): SignupPolicy {
  const name = host.toLowerCase().replace(/^\[(.*)\]$/, '$1')
  const loopback = name === 'localhost' || name === '::1' || /^127(\.\d{1,3}){3}$/.test(name) || /^::ffff:127(\.\d{1,3}){3}$/.test(name)
  return loopback ? 'open' : 'closed'
}

/** The policy with its sign-up decided for a service listening on `host`. */
export function policyFor (policy: AccountPolicy | undefined, host: string): AccountPolicy & { readonly signup: SignupPolicy } {
  const given = policy ?? OPEN_POLICY
  return { ...given, signup: policy?.signup ?? defaultSignup(host) }
}

/** No limits; sign-up as {@link defaultSignup} says. */
export const OPEN_POLICY: AccountPolicy = { allow: [], maxBytesPerAccount: 0, maxIpnsKeysPerAccount: 0 }

/** The checks the routes make, on the service's database. */
export class AccountLimits {
  private readonly hasAccount: Database.Statement
  private readonly bytesOf: Database.Statement
  private readonly keysOf: Database.Statement
  private readonly allowed: ReadonlySet<string>
  /** Per account with requests under way: the bytes they took, and what ended ones listed since. */
  private readonly running = new Map<string, { taken: number, settled: number, holds: number }>()

  constructor (db: Database.Database, readonly policy: AccountPolicy & { readonly signup: SignupPolicy } = { ...OPEN_POLICY, signup: 'open' }) {
    this.hasAccount = db.prepare('SELECT 1 FROM api_keys WHERE address = ? LIMIT 1').pluck()
    this.bytesOf = db.prepare('SELECT COALESCE(SUM(size), 0) FROM files WHERE address = ?').pluck()
    this.keysOf = db.prepare('SELECT COUNT(*) FROM ipns_keys WHERE address = ?').pluck()
    this.allowed = new Set(policy.allow.map(a => a.toLowerCase()))
  }

  /** Before an API key is made: a wallet with an account may always get another; a new one only as the policy says. */
  checkSignup (address: string): void {
    const { signup } = this.policy
    if (signup === 'open' || this.hasAccount.get(address) !== undefined) return
    if (signup === 'allowlist' && this.allowed.has(address.toLowerCase())) return
    throw new HttpFailure(403, signup === 'closed'
      ? 'sign-up is closed on this service: its operator lets no new account in ([local_service] signup; a service listening beyond loopback is closed unless its operator opens it)'
      : 'this wallet may not sign up here: its operator lists the wallets that may ([local_service] allow)')
  }

  /** How many more bytes the account may upload (Infinity without a limit); a 413 when none. */
  bytesLeft (address: string): number {
    const max = this.policy.maxBytesPerAccount
    if (max <= 0) return Infinity
    const left = max - (this.bytesOf.get(address) as number) - (this.running.get(address)?.taken ?? 0)
    if (left <= 0) throw quotaFailure(max)
    return left
  }

  /**
   * A hold on the account's quota for one upload request: it {@link QuotaHold.take}s the bytes it
   * stores as they arrive, against what the account holds plus what its other requests under way
   * took. Each request reading only what was listed when it started let N requests at once store
   * N times the quota. A 413 when nothing is left.
   */
  hold (address: string): QuotaHold {
    const max = this.policy.maxBytesPerAccount
    if (max <= 0) return { limited: false, take: () => {}, release: () => {} }
    this.bytesLeft(address)
    const used = this.bytesOf.get(address) as number
    const account = this.running.get(address) ?? { taken: 0, settled: 0, holds: 0 }
    this.running.set(address, account)
    account.holds++
    const settledAtStart = account.settled
    let mine = 0
    let released = false
    return {
      limited: true,
      take: (bytes: number) => {
        mine += bytes
        account.taken += bytes
        // What requests that ended since this one started listed is in `settled`, not in `used`.
        if (used + (account.settled - settledAtStart) + account.taken > max) throw quotaFailure(max)
      },
      release: (listed: boolean) => {
        if (released) return
        released = true
        account.taken -= mine
        if (listed) account.settled += mine
        if (--account.holds === 0) this.running.delete(address)
      }
    }
  }

  /** Before an IPNS key is made. */
  checkNewIpnsKey (address: string): void {
    const max = this.policy.maxIpnsKeysPerAccount
    if (max > 0 && (this.keysOf.get(address) as number) >= max) {
      throw new HttpFailure(403, `this account holds ${max} IPNS keys, the most this service allows: remove one first ([local_service] max_ipns_keys_per_account)`)
    }
  }
}

/** One request's share of its account's quota (see {@link AccountLimits.hold}). */
export interface QuotaHold {
  /** False without a quota: nothing is counted, and the request need remember nothing to undo. */
  readonly limited: boolean
  /** Counts bytes the request stores; a 413 once the account would pass its quota. */
  take: (bytes: number) => void
  /** When the request ends: `listed` once its uploads are in the account's listing (then counted there). */
  release: (listed: boolean) => void
}

export function quotaFailure (max: number): HttpFailure {
  return new HttpFailure(413, `this account's uploads would pass ${max} bytes, the most this service allows per account ([local_service] max_bytes_per_account)`)
}
