import type Database from 'better-sqlite3'
import { HttpFailure } from './http.js'
import { SignupGate, type SignupPolicy } from './signup-gate.js'

/**
 * Who may make an account, and how much each may hold. Anyone who reaches a self-hosted service
 * (any local user, on loopback) could otherwise sign up, fill its disk and make keys without end.
 */
export interface AccountPolicy {
  /**
   * `open`: any wallet; `allowlist`: only those in `allow`; `invite`: only a wallet bringing an
   * unused invitation code; `closed`: no new account (those made keep working). Unset:
   * {@link defaultSignup} of the address it listens on.
   */
  readonly signup?: SignupPolicy
  /** Wallet addresses (0x…) that may sign up under `allowlist`. */
  readonly allow: readonly string[]
  /** New accounts open sign-up may make in an hour; 0 or unset: no limit. */
  readonly signupsPerHour?: number
  /** The bytes of uploads one account may hold; 0: no limit. */
  readonly maxBytesPerAccount: number
  /** The bytes of uploads all accounts together may hold; 0 or unset: no limit. */
  readonly maxBytesTotal?: number
  /** The IPNS keys one account may hold; 0: no limit. */
  readonly maxIpnsKeysPerAccount: number
}

export type { SignupPolicy } from './signup-gate.js'

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

/** Requests under way against one quota: the bytes they took, and what ended ones listed since. */
interface Tally { taken: number, settled: number, holds: number }

/** The key of the tally of every account together (an address starts with 0x). */
const ALL = '*'

/** The checks the routes make, on the service's database. */
export class AccountLimits {
  readonly signups: SignupGate
  private readonly bytesOf: Database.Statement
  private readonly bytesOfAll: Database.Statement
  private readonly keysOf: Database.Statement
  /** Per account with requests under way, and {@link ALL} for the service's total. */
  private readonly running = new Map<string, Tally>()

  constructor (db: Database.Database, readonly policy: AccountPolicy & { readonly signup: SignupPolicy } = { ...OPEN_POLICY, signup: 'open' }) {
    this.signups = new SignupGate(db, policy)
    this.bytesOf = db.prepare('SELECT COALESCE(SUM(size), 0) FROM files WHERE address = ?').pluck()
    this.bytesOfAll = db.prepare('SELECT COALESCE(SUM(size), 0) FROM files').pluck()
    this.keysOf = db.prepare('SELECT COUNT(*) FROM ipns_keys WHERE address = ?').pluck()
  }

  /** Before a sign-in message or an API key is made (see {@link SignupGate.check}). */
  checkSignup (address: string, invite?: string, spend = false): void {
    this.signups.check(address, invite, spend)
  }

  /** Whether uploads are counted at all: some quota is set. */
  get limited (): boolean {
    return this.policy.maxBytesPerAccount > 0 || (this.policy.maxBytesTotal ?? 0) > 0
  }

  /**
   * A hold on the account's quota (and the service's total) for one upload request: it
   * {@link QuotaHold.take}s the bytes it stores as they arrive, against what is held plus what
   * other requests under way took. Each request reading only what was listed when it started let
   * N requests at once store N times the quota. A 413 when nothing is left.
   */
  hold (address: string): QuotaHold {
    const quotas = [
      { key: address, max: this.policy.maxBytesPerAccount, used: () => this.bytesOf.get(address) as number, failure: quotaFailure },
      { key: ALL, max: this.policy.maxBytesTotal ?? 0, used: () => this.bytesOfAll.get() as number, failure: totalFailure }
    ].filter(q => q.max > 0)
    if (quotas.length === 0) return { limited: false, take: () => {}, release: () => {} }
    const counted = quotas.map(q => {
      const tally = this.running.get(q.key) ?? { taken: 0, settled: 0, holds: 0 }
      const used = q.used()
      if (used + tally.taken >= q.max) throw q.failure(q.max)
      return { ...q, tally, used, settledAtStart: tally.settled }
    })
    for (const c of counted) {
      this.running.set(c.key, c.tally)
      c.tally.holds++
    }
    let mine = 0
    let released = false
    return {
      limited: true,
      take: (bytes: number) => {
        mine += bytes
        for (const c of counted) c.tally.taken += bytes
        // What requests that ended since this one started listed is in `settled`, not in `used`.
        for (const c of counted) if (c.used + (c.tally.settled - c.settledAtStart) + c.tally.taken > c.max) throw c.failure(c.max)
      },
      release: (listed: boolean) => {
        if (released) return
        released = true
        for (const c of counted) {
          c.tally.taken -= mine
          if (listed) c.tally.settled += mine
          if (--c.tally.holds === 0) this.running.delete(c.key)
        }
      }
    }
  }

  /**
   * The bytes the account's uploads hold, and its limit as production's `user_data_usage` names
   * them: what it holds plus what it may still add under its own quota and the service's total
   * (whichever leaves less). With no quota, the largest safe integer: a number, as clients expect.
   */
  usage (address: string): { dataLimit: number, dataUsed: number } {
    const used = this.bytesOf.get(address) as number
    const perAccount = this.policy.maxBytesPerAccount
    const total = this.policy.maxBytesTotal ?? 0
    const left = Math.min(
      perAccount > 0 ? perAccount - used : Infinity,
      total > 0 ? total - (this.bytesOfAll.get() as number) : Infinity
    )
    return { dataLimit: left === Infinity ? Number.MAX_SAFE_INTEGER : used + Math.max(0, left), dataUsed: used }
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

/** The service as a whole is full: however many accounts sign-up made, they share this. */
export function totalFailure (max: number): HttpFailure {
  return new HttpFailure(413, `this service's uploads, of every account together, would pass ${max} bytes, the most its operator allows ([local_service] max_bytes_total)`)
}
