import type Database from 'better-sqlite3'
import type { Statement } from 'better-sqlite3'
import { z } from 'zod'
import { KEY } from './keys.js'

/** The last forget that ran (not a dry run), from the CLI or the daemon. */
export interface ForgetRecord {
  readonly at: string
  readonly kept: number
  readonly forgotten: number
  /** Kept publishes sealed again with a new link. */
  readonly relinked: number
}

/** Objects and their bytes. */
export interface ObjectCount { readonly objects: number, readonly bytes: number }

/** Objects a prune asked to delete that the store refused to: they stay. */
export interface PruneRefusedRecord extends ObjectCount {
  /** The store's first reason, made safe and bounded by the store. */
  readonly reason: string
}

/** The last prune that ran (not a dry run): what it deleted, by kind, and what it was refused, if anything. */
export interface PruneRecord extends ObjectCount {
  readonly at: string
  readonly kinds: { readonly root: number, readonly content: number, readonly segment: number, readonly manifest: number }
  readonly refused?: PruneRefusedRecord
  /** Mostly unused content packs it rewrote, and the live bytes it copied. */
  readonly repacked?: { readonly packs: number, readonly bytes: number }
}

/**
 * The repack as of a count: packs a prune would rewrite (a dry run), and packs rewritten whose old
 * copy waits for a publish, with the unused bytes each frees once deleted.
 */
export interface RepackPlanRecord {
  readonly packs: number
  readonly freed: number
  readonly waiting: number
  readonly waitingBytes: number
}

/**
 * What the last prune or dry run counted, as of `at`: what the account lists, and what a prune
 * then would delete. After a prune that deleted, that is nothing, and the account is counted
 * without what it deleted.
 */
export interface PrunePlanRecord {
  readonly at: string
  readonly dryRun: boolean
  readonly held: ObjectCount
  readonly wouldFree: ObjectCount
  /** Objects no kept publish needs, stored within `prune_margin`: a prune after the margin deletes them. */
  readonly young: number
  /** Chains a forget replaced within `prune_margin`: kept whole until it passes. */
  readonly chainsHeld: number
  readonly repack?: RepackPlanRecord
}

const count = z.number().int().nonnegative()
const at = z.string().refine(value => Number.isFinite(Date.parse(value)))
const objects = z.object({ objects: count, bytes: count })
const forgetSchema = z.object({ at, kept: count, forgotten: count, relinked: count })
const refusedSchema = objects.extend({ reason: z.string().max(1000) })
const pruneSchema = objects.extend({ at, kinds: z.object({ root: count, content: count, segment: count, manifest: count }), refused: refusedSchema.optional(), repacked: z.object({ packs: count, bytes: count }).optional() })
const repackSchema = z.object({ packs: count, freed: count, waiting: count, waitingBytes: count })
const planSchema = z.object({ at, dryRun: z.boolean(), held: objects, wouldFree: objects, young: count, chainsHeld: count, repack: repackSchema.optional() })

/**
 * The last forget, the last prune and the last prune plan in `sync_state`, as JSON: CLI runs
 * and the daemon's both write them, so status shows them after a restart. A value that does not
 * parse (a damaged or foreign one) reads as none.
 */
export class RetentionRecords {
  private readonly s: Record<'get' | 'set', Statement>

  constructor (private readonly db: Database.Database) {
    this.s = {
      get: db.prepare('SELECT value FROM sync_state WHERE key = ?').pluck(),
      set: db.prepare('INSERT INTO sync_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value')
    }
  }

  lastForget (): ForgetRecord | null {
    return this.read(KEY.lastForget, forgetSchema)
  }

  lastPrune (): PruneRecord | null {
    return this.read(KEY.lastPrune, pruneSchema)
  }

  prunePlan (): PrunePlanRecord | null {
    return this.read(KEY.prunePlan, planSchema)
  }

  forgot (record: ForgetRecord): void {
    this.s.set.run(KEY.lastForget, JSON.stringify(forgetSchema.parse(record)))
  }

  /** A prune or dry run ended: its plan, and for a prune (not a dry run), what it deleted. */
  pruned (plan: PrunePlanRecord, deleted: PruneRecord | null): void {
    const planJson = JSON.stringify(planSchema.parse(plan))
    const deletedJson = deleted === null ? null : JSON.stringify(pruneSchema.parse(deleted))
    this.db.transaction(() => {
      this.s.set.run(KEY.prunePlan, planJson)
      if (deletedJson !== null) this.s.set.run(KEY.lastPrune, deletedJson)
    }).immediate()
  }

  private read<T> (key: string, schema: z.ZodType<T>): T | null {
    const raw = this.s.get.get(key) as string | undefined
    if (raw === undefined) return null
    try {
      const parsed = schema.safeParse(JSON.parse(raw))
      return parsed.success ? parsed.data : null
    } catch {
      return null
    }
  }
}
