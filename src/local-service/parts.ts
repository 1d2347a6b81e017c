import type Database from 'better-sqlite3'
import { CID } from 'multiformats/cid'
import type { AccountLimits } from './account-policy.js'
import type { BlockStore } from './blocks.js'
import type { CarLimits } from './routes/gateway-car.js'
import { HttpFailure } from './http.js'
import type { TokenIssuer } from './tokens.js'
import type { UploadGate } from './upload-gate.js'

/** What every route module is built from. */
export interface ServiceParts {
  readonly db: Database.Database
  readonly blocks: BlockStore
  /** Every upload runs inside it, so a reclaim knows which began before it (upload-gate.ts). */
  readonly gate: UploadGate
  /** An upload left the listing: a reclaim may give its space back. */
  readonly deleted: () => void
  readonly tokens: TokenIssuer
  readonly pageSize: number
  readonly dealDelayMs: number
  readonly authMessageTtlMs: number
  /** The time in ms the sign-in messages expire by. */
  readonly now: () => number
  /** Sign-up and per-account quotas. */
  readonly limits: AccountLimits
  /** What one gateway CAR response may make the server do. */
  readonly carLimits: CarLimits
}

/** A CID from a request, or a 400 that says it is malformed. */
export function parseCid (text: string): CID {
  try {
    return CID.parse(text)
  } catch {
    throw new HttpFailure(400, `invalid cid: ${text.slice(0, 100)}`)
  }
}
