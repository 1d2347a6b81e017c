import { createHash, randomBytes } from 'node:crypto'
import type Database from 'better-sqlite3'

/** How long an invitation is good for when its maker says nothing: a week. */
export const DEFAULT_INVITATION_TTL_SECONDS = 7 * 86_400

const CODE = /^[A-Za-z0-9_-]{16,64}$/

/** Only a hash is kept: a copy of the database must not let anyone in. */
function hashOf (code: string): string {
  return createHash('sha256').update(code).digest('hex')
}

/**
 * Invitation codes for `signup = "invite"`: the operator makes one for each person, and it lets
 * one new wallet make an account, once, before it expires.
 */
export class Invitations {
  private readonly insert: Database.Statement
  private readonly open: Database.Statement
  private readonly use: Database.Statement

  constructor (db: Database.Database) {
    this.insert = db.prepare('INSERT INTO invitations (code_hash, created_at, expires_at) VALUES (?, ?, ?)')
    this.open = db.prepare('SELECT 1 FROM invitations WHERE code_hash = ? AND used_by IS NULL AND expires_at > ?').pluck()
    this.use = db.prepare('UPDATE invitations SET used_by = ?, used_at = ? WHERE code_hash = ? AND used_by IS NULL AND expires_at > ?')
  }

  /** A new code, shown once: only its hash is stored. */
  make (ttlSeconds = DEFAULT_INVITATION_TTL_SECONDS, now = Date.now()): string {
    const code = randomBytes(18).toString('base64url')
    this.insert.run(hashOf(code), now, now + ttlSeconds * 1000)
    return code
  }

  /** Is `code` one that may still be used? */
  isOpen (code: string | undefined, now = Date.now()): boolean {
    return code !== undefined && CODE.test(code) && this.open.get(hashOf(code), now) !== undefined
  }

  /** Spends `code` for `address`; false when it was used, expired or never made. */
  spend (code: string | undefined, address: string, now = Date.now()): boolean {
    return code !== undefined && CODE.test(code) && this.use.run(address, now, hashOf(code), now).changes === 1
  }
}
