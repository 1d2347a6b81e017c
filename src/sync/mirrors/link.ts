import { CidsyncError } from '../../errors.js'
import type { DealsClient } from '../../remote/index.js'
import { homeAdvice, type ObjectHome } from '../../store/index.js'

/** A configured mirror as the sync room sees it: its name, clients and what is asked of it. */
export interface MirrorLink {
  readonly name: string
  /** Its objects and pointer; a service's deals too (a directory has none). */
  readonly clients: ObjectHome & { readonly deals?: DealsClient }
  /** Ask its deal service for a deal of each object. */
  readonly deal: boolean
  readonly maxLagSeconds: number
  /** Base URL, for status. */
  readonly describe: string
}

/** How often a mirror's loop looks at the log and at the mirror's pointer, and how it backs off. */
export interface MirrorTiming {
  /** Between looks at the log when nothing waits (a local read). */
  readonly idleMs: number
  /** Between looks at the mirror's pointer when nothing waits (one GET). */
  readonly pointerCheckMs: number
  readonly firstRetryMs: number
  readonly maxRetryMs: number
}

export const DEFAULT_MIRROR_TIMING: MirrorTiming = { idleMs: 2_000, pointerCheckMs: 60_000, firstRetryMs: 2_000, maxRetryMs: 5 * 60_000 }

/** A problem with a mirror's pointer, as status shows it. */
export interface MirrorPointerNote {
  readonly state: 'ahead' | 'rolled-back'
  readonly at: string
  /** What the mirror's pointer held when seen. */
  readonly seen: string
  readonly code: string
  readonly message: string
}

/** What one mirror's loop is doing, for status. */
export interface ReplicatorState {
  readonly copiedTotal: number
  readonly lastError: { readonly at: string, readonly message: string, readonly code: string | null, readonly advice: string } | null
  readonly retryAt: string | null
  readonly pointer: MirrorPointerNote | null
  /** Objects the primary would not give (gone or damaged there): skipped, so the rest goes on. */
  readonly unavailable: { readonly count: number, readonly last: { readonly cid: string, readonly message: string } | null }
}

/** What to do about a failure to copy to a mirror, by what failed: the mirror's own failures as its backend says. */
export function mirrorAdvice (err: unknown, name: string): string {
  const own = homeAdvice(err, name)
  if (own !== undefined) return own
  const code = err instanceof CidsyncError ? err.code : ''
  if (code === 'ERR_INTEGRITY') return 'the mirror computed another CID for the same bytes: it imports with other parameters; use a Kubo-compatible service'
  if (code === 'ERR_GATEWAY_FETCH' || code === 'ERR_CONTENT_NOT_FOUND') return 'the primary\'s gateways did not give the object: check [service] gateways; copying resumes by itself'
  return 'copying resumes by itself; if it keeps failing, check the mirror (`cidsync verify --mirror ' + name + '`)'
}
