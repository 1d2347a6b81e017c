import { randomUUID } from 'node:crypto'
import type { CID } from 'multiformats/cid'
import type { QuotaHold } from './account-policy.js'
import type { ServiceParts } from './parts.js'

/** One file an upload imported, as the listing records it and `add` answers it. */
export interface Added { readonly cid: string, readonly size: number, readonly dagSize: number, readonly name: string, readonly mime: string }

/**
 * What an upload may still add to its account: past its quota hold the import stops with a 413. The
 * blocks it made (`made`, kept only under a quota) are removed when it fails, so a failed upload leaves nothing.
 */
export interface Allowance { readonly quota: QuotaHold, readonly made: CID[] }

/** Stores one block an upload made, under its allowance (the blocks a refused upload made are removed). */
export function putUnder (parts: ServiceParts, allowance: Allowance, cid: CID, block: Uint8Array): void {
  const limited = allowance.quota.limited
  if (limited && !parts.blocks.has(cid)) allowance.made.push(cid)
  parts.blocks.put(cid, block, limited ? allowance : undefined)
}

/**
 * An upload runs inside the reclaim gate (upload-gate.ts), from before its first block to after
 * its listing: a reclaim waits for it. It leaves no block pending as it ends, listed or failed,
 * so no pack of its epoch gets rows once it is done (blocks.ts, rule 6).
 */
export async function insideGate<T> (parts: ServiceParts, run: () => Promise<T>): Promise<T> {
  const ticket = await parts.gate.enter()
  parts.blocks.notice(ticket.epoch)
  try {
    return await run()
  } catch (err) {
    // What a failed upload wrote without a quota stays, as before; made durable now, not by a later upload.
    // A failed fsync here is kept by the store (rule 5) and answered to every later request.
    await parts.blocks.flushAsync().catch(() => {})
    throw err
  } finally {
    ticket.leave()
  }
}

/**
 * What every upload does around its import, over HTTP or from this process
 * (`add-in-process.ts`): holds the account's quota while it runs, removes what a refused one made,
 * makes its blocks durable before anything is listed or answered (blocks.ts, rule 3; the thread
 * goes on with other uploads while the disk syncs), then lists its files for the account.
 */
export function uploadCommitter (parts: ServiceParts): (address: string, run: (allowance: Allowance) => Promise<Added[]>) => Promise<Added[]> {
  const insert = parts.db.prepare(`INSERT INTO files (id, address, cid, file_name, mime_type, size, created_at, last_update)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
  return async (address, run) => await insideGate(parts, async () => {
    const allowance: Allowance = { quota: parts.limits.hold(address), made: [] }
    let added: Added[]
    let counted = false
    try {
      try {
        added = await run(allowance)
      } catch (err) {
        // Any failure (past the quota, a refused name, a client gone) removes what it made: a block
        // kept and not listed would be held by no account, and escape the quota.
        for (const cid of allowance.made) parts.blocks.remove(cid)
        throw err
      }
      parts.blocks.settle(allowance.made)
      await parts.blocks.flushAsync()
      const now = Date.now()
      parts.db.transaction(() => {
        for (const file of added) insert.run(randomUUID(), address, file.cid, file.name, file.mime, file.size, now, now)
      }).immediate()
      counted = true
    } finally {
      allowance.quota.release(counted)
    }
    return added
  })
}
