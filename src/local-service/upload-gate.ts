import { chmodSync, closeSync, openSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { backoffMs, sleep, type Backoff } from '../util/backoff.js'
import { HttpFailure } from './http.js'

/** The lock files uploads hold, one for each parity of the reclaim epoch. */
export const GATE_FILES = ['uploads-0.lock', 'uploads-1.lock'] as const

const EPOCH_KEY = 'reclaim_epoch'
/** How long an upload tries to enter before it gives up: the reclaim holds a gate for an instant only. */
const ENTER_FOR_MS = 10_000
const ENTER_RETRY: Backoff = { firstMs: 5, maxMs: 200, jitter: 'full' }
const DRAIN_RETRY: Backoff = { firstMs: 25, maxMs: 1_000, jitter: 'none' }

/** The reclaim epoch in the service's database: each reclaim moves it on once it has condemned the dead blocks. */
export function readEpoch (db: Database.Database): number {
  const value = db.prepare('SELECT value FROM settings WHERE key = ?').pluck().get(EPOCH_KEY) as string | undefined
  return value === undefined ? 0 : Number(value)
}

export function writeEpoch (db: Database.Database, epoch: number): void {
  db.prepare('INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(EPOCH_KEY, String(epoch))
}

/** An upload inside the gate: the epoch it entered in, and how it leaves. */
export interface UploadTicket {
  readonly epoch: number
  leave: () => void
}

function lockFile (path: string): Database.Database {
  closeSync(openSync(path, 'a', 0o600))
  chmodSync(path, 0o600)
  return new Database(path, { timeout: 0 })
}

function isBusy (err: unknown): boolean {
  return String((err as { code?: unknown }).code ?? '').startsWith('SQLITE_BUSY')
}

/**
 * Which uploads a reclaim must wait for, across every process on the data dir. An upload enters
 * in the current reclaim epoch and holds a shared lock on that epoch's parity file until it
 * ends (an fcntl lock under SQLite: the kernel drops it when the process dies, even by kill -9).
 * A reclaim moves the epoch on, then takes the old parity's file exclusively for an instant: it
 * gets it once every upload that began before is done. Uploads begun after use the other file,
 * so a busy service never starves it.
 */
export class UploadGate {
  private readonly shared: Database.Database[]
  private readonly held = [0, 0]
  private readonly epochOf: Database.Statement
  private drains: Database.Database[] | undefined

  constructor (private readonly dir: string, db: Database.Database) {
    this.shared = GATE_FILES.map(name => lockFile(join(dir, name)))
    this.epochOf = db.prepare('SELECT value FROM settings WHERE key = ?').pluck()
  }

  private epoch (): number {
    const value = this.epochOf.get(EPOCH_KEY) as string | undefined
    return value === undefined ? 0 : Number(value)
  }

  /**
   * Enters an upload in the current epoch. The epoch is read again once its lock is held: a
   * reclaim that moved it on meanwhile may not have seen that lock, so the upload enters anew.
   */
  async enter (): Promise<UploadTicket> {
    const deadline = Date.now() + ENTER_FOR_MS
    for (let tries = 1; ; tries++) {
      const epoch = this.epoch()
      const side = epoch % 2
      if (this.take(side)) {
        if (this.epoch() === epoch) {
          let left = false
          return { epoch, leave: () => { if (!left) { left = true; this.release(side) } } }
        }
        this.release(side)
      }
      if (Date.now() > deadline) throw new HttpFailure(503, 'the service is reclaiming space and could not take this upload in time: send it again')
      await sleep(backoffMs(ENTER_RETRY, tries))
    }
  }

  private take (side: number): boolean {
    const held = this.held[side] ?? 0
    if (held > 0) {
      this.held[side] = held + 1
      return true
    }
    const lock = this.shared[side] as Database.Database
    try {
      lock.exec('BEGIN')
      lock.prepare('SELECT count(*) FROM sqlite_master').get()
    } catch (err) {
      if (lock.inTransaction) lock.exec('ROLLBACK')
      if (isBusy(err)) return false
      throw err
    }
    this.held[side] = 1
    return true
  }

  private release (side: number): void {
    const held = (this.held[side] ?? 1) - 1
    this.held[side] = held
    const lock = this.shared[side] as Database.Database
    // Closed by a stop while the upload ran: its lock went with the connection.
    if (held === 0 && lock.open) lock.exec('ROLLBACK')
  }

  /**
   * Waits until no upload that entered in an epoch of `epoch`'s parity is running, in any process.
   * `onWait` is told once when it must wait. Ends early only when `signal` aborts.
   */
  async drain (epoch: number, signal?: AbortSignal, onWait?: () => void): Promise<void> {
    this.drains ??= GATE_FILES.map(name => lockFile(join(this.dir, name)))
    const lock = this.drains[epoch % 2] as Database.Database
    for (let tries = 1; ; tries++) {
      signal?.throwIfAborted()
      try {
        lock.exec('BEGIN EXCLUSIVE')
        lock.exec('ROLLBACK')
        return
      } catch (err) {
        if (lock.inTransaction) lock.exec('ROLLBACK')
        if (!isBusy(err)) throw err
      }
      if (tries === 1) onWait?.()
      await sleep(backoffMs(DRAIN_RETRY, tries), signal)
    }
  }

  close (): void {
    for (const lock of [...this.shared, ...(this.drains ?? [])]) if (lock.open) lock.close()
  }
}
