import type { StatusDocument } from '../daemon/index.js'
import { countOf, formatBytes, formatCount } from './format.js'
import { timeWithAge } from './relative-time.js'

type Retention = NonNullable<StatusDocument['retention']>

/** What sync.sqlite records of forget and prune, and the daemon's next count (the offline summary has no daemon). */
export type RetentionRecordsShown = Pick<Retention, 'lastForget' | 'lastPrune' | 'plan' | 'planDueAt' | 'planError'>

const objects = (n: { readonly objects: number, readonly bytes: number }): string => `${countOf(n.objects, 'object', 'objects')} (${formatBytes(n.bytes)})`

/**
 * `cidsync status`'s lines for forget and prune: the daemon's last run and its error, then the
 * records ({@link recordLines}). None without `[retention]` and without a record.
 */
export function retentionLines (r: StatusDocument['retention']): string[] {
  if (r == null) return []
  const records = recordLines(r)
  if (!r.enabled) return records.length === 0 ? [] : ['retention: off (no [retention] in the config): every publish is kept; the last runs were:', ...records]
  const lines: string[] = []
  if (r.lastError !== null) lines.push(`retention: the last forget and prune failed at ${timeWithAge(r.lastError.at)}: ${r.lastError.message}${r.lastError.code === null ? '' : ` [${r.lastError.code}]`}`)
  if (r.skipped !== null) lines.push(`retention: not run: ${r.skipped}`)
  if (r.running) lines.push('retention: forget and prune running now')
  // A daemon without the records (an older one) says only what it ran itself.
  if (r.lastForget === undefined && r.lastRun !== null) {
    lines.push(`retention: at ${timeWithAge(r.lastRun.at)} kept ${formatCount(r.lastRun.kept)} publishes, forgot ${formatCount(r.lastRun.forgotten)}, deleted ${formatCount(r.lastRun.deleted)} objects (${formatBytes(r.lastRun.bytes)})`)
  }
  if (records.length === 0 && r.lastRun === null && lines.length === 0) lines.push('retention: not run yet (forget and prune run on [retention] schedule)')
  return [...lines, ...records]
}

/**
 * The last forget, the last prune, and what the account held and a prune would free, each with
 * the time it was counted: a figure is never shown as current. A forget after the count makes
 * it out of date, and says so.
 */
export function recordLines (r: RetentionRecordsShown): string[] {
  const lines: string[] = []
  const f = r.lastForget
  if (f != null) lines.push(`retention: last forget at ${timeWithAge(f.at)}: kept ${countOf(f.kept, 'publish', 'publishes')}, forgot ${formatCount(f.forgotten)}, linked ${formatCount(f.relinked)} anew`)
  const p = r.lastPrune
  if (p != null) {
    const rewrote = p.repacked === undefined ? '' : `; rewrote ${countOf(p.repacked.packs, 'mostly unused content pack', 'mostly unused content packs')} (${formatBytes(p.repacked.bytes)} of live files copied)`
    lines.push(`retention: last prune at ${timeWithAge(p.at)}: deleted ${objects(p)}${rewrote}${p.refused === undefined ? '' : `; the service refused to delete ${objects(p.refused)} (${p.refused.reason}): they stay, and the next prune asks again`}`)
  }
  const plan = r.plan
  if (plan != null) {
    lines.push(`retention: the account held ${objects(plan.held)} at ${timeWithAge(plan.at)}, counted by ${plan.dryRun ? 'a dry run' : 'a prune'}`)
    const waits = plan.young > 0 || plan.chainsHeld > 0
      ? `; kept for now, within prune_margin: ${countOf(plan.young, 'object', 'objects')}${plan.chainsHeld > 0 ? ` and ${countOf(plan.chainsHeld, 'forgotten chain', 'forgotten chains')}` : ''}`
      : ''
    lines.push(`retention: a prune would free ${objects(plan.wouldFree)}, as of that count${waits}`)
    const repack = plan.repack
    if (repack !== undefined && repack.packs > 0) lines.push(`retention: a prune would also rewrite ${countOf(repack.packs, 'mostly unused content pack', 'mostly unused content packs')}, to free ${formatBytes(repack.freed)} once a publish and the prune after it have run`)
    if (repack !== undefined && repack.waiting > 0) {
      lines.push(`retention: ${countOf(repack.waiting, 'rewritten content pack waits', 'rewritten content packs wait')} for a publish; the prune after it deletes ${repack.waiting === 1 ? 'it' : 'them'} (${formatBytes(repack.waitingBytes)} unused)`)
    }
    if (f != null && f.forgotten > 0 && Date.parse(f.at) > Date.parse(plan.at)) lines.push('retention: a forget ran after that count, so a prune may free more: `cidsync prune --dry-run` counts again')
    if (r.planDueAt != null) lines.push(`retention: the daemon counts again at ${timeWithAge(r.planDueAt)}, once prune_margin has passed`)
  }
  if (r.planError != null) lines.push(`retention: the last count of what a prune would free failed at ${timeWithAge(r.planError.at)}: ${r.planError.message}`)
  return lines
}
