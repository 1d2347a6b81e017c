import { InternalError } from '../errors.js'
import { BUCKET_RULES, bucketOf, type BucketRule } from './buckets.js'
import { isZeroDuration } from './duration.js'
import { isEmptyPolicy, type RetentionPolicy } from './policy.js'
import type { KeepReason } from './reasons.js'
import { isTimeZone, wallClock, type WallClock } from './time-zone.js'
import { withinStart } from './within.js'

/** One publish of the history: its root's CID, when and by which device it was made, its marks. */
export interface Publish {
  readonly cid: string
  readonly time: Date
  readonly device: string
  /** A user's labels (`cidsync snapshot --keep "before the move"`): a marked publish is always kept. */
  readonly marks: readonly string[]
}

/** What the policy says of one publish: kept, with the rules that keep it, or forgotten (no reasons). */
export interface Decision<P extends Publish = Publish> {
  readonly publish: P
  readonly keep: boolean
  readonly reasons: readonly KeepReason[]
}

export interface ApplyOptions {
  /** The present: `keep_within` counts back from the newest publish not after it. */
  readonly now: Date
  /** The IANA zone whose hours, days, weeks, months and years the buckets are. */
  readonly timeZone: string
  /** The CID the pointer names: kept whatever the policy, even when another publish's clock ran ahead. */
  readonly pointer?: string | undefined
  /**
   * Each device's last publish, as the chain orders them (not by time: a clock set back would
   * pick another): kept, reason `device`. A device checks its own last publish is in the history.
   */
  readonly deviceHeads?: ReadonlySet<string>
}

interface Counter {
  readonly reason: 'last' | BucketRule
  left: number
  last: number | undefined
}

const COUNTS: ReadonlyArray<readonly ['last' | BucketRule, keyof RetentionPolicy]> = [
  ['last', 'keepLast'], ['hourly', 'keepHourly'], ['daily', 'keepDaily'], ['weekly', 'keepWeekly'], ['monthly', 'keepMonthly'], ['yearly', 'keepYearly']
]

function checked (publishes: readonly Publish[], policy: RetentionPolicy, options: ApplyOptions): void {
  if (isEmptyPolicy(policy)) throw new InternalError('an empty retention policy reached the policy engine: it would forget every publish but the newest, and the config refuses one')
  for (const [, key] of COUNTS) {
    const n = policy[key]
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) throw new InternalError(`retention ${key} is ${String(n)}, not a whole number of 0 or more`)
  }
  if (!isTimeZone(options.timeZone)) throw new InternalError(`${JSON.stringify(options.timeZone)} is not a time zone`)
  if (!Number.isFinite(options.now.getTime())) throw new InternalError('the retention policy was given an invalid present time')
  const seen = new Set<string>()
  for (const p of publishes) {
    if (!Number.isFinite(p.time.getTime())) throw new InternalError(`publish ${p.cid} has an invalid time`)
    if (seen.has(p.cid)) throw new InternalError(`publish ${p.cid} is given twice to the retention policy`)
    seen.add(p.cid)
  }
}

/**
 * Which publishes a policy keeps, and why; restic's `forget` rules. Going newest first (by time,
 * then by CID, so that publishes of one instant from several devices always come out in one
 * order), each count rule keeps the first publish it meets in each bucket until it has kept its
 * count. While a rule still has buckets to fill, it also keeps the oldest publish, for the longest
 * history. The newest publish and the pointer's are always kept: forgetting either would move the
 * pointer back. A marked publish is always kept too; a mark changes no count. Answers one
 * decision a publish, newest first. Cost: a sort, then one pass with one wall-clock reading each.
 */
export function applyPolicy<P extends Publish> (publishes: readonly P[], policy: RetentionPolicy, options: ApplyOptions): Array<Decision<P>> {
  checked(publishes, policy, options)
  const sorted = publishes.map(publish => ({ publish, ms: publish.time.getTime() }))
    .sort((a, b) => b.ms - a.ms || (a.publish.cid < b.publish.cid ? 1 : a.publish.cid > b.publish.cid ? -1 : 0))
  const now = options.now.getTime()
  // A publish from a device whose clock runs ahead must not move the window: the newest not after now.
  const anchor = sorted.find(s => s.ms <= now)?.ms ?? now
  const within = policy.keepWithin
  const withinFrom = within === undefined || isZeroDuration(within) ? undefined : withinStart(anchor, within, options.timeZone)
  const counters: Counter[] = COUNTS.map(([reason, key]) => ({ reason, left: policy[key] as number, last: undefined }))
    .filter(c => c.left > 0)
  const zoned = counters.some(c => (BUCKET_RULES as readonly string[]).includes(c.reason))
  return sorted.map(({ publish, ms }, i): Decision<P> => {
    const reasons: KeepReason[] = []
    if (i === 0) reasons.push('newest')
    if (options.pointer !== undefined && publish.cid === options.pointer) reasons.push('pointer')
    if (options.deviceHeads?.has(publish.cid) === true) reasons.push('device')
    if (publish.marks.length > 0) reasons.push('marked')
    if (withinFrom !== undefined && ms >= withinFrom) reasons.push('within')
    const wall: WallClock | undefined = zoned ? wallClock(ms, options.timeZone) : undefined
    for (const counter of counters) {
      if (counter.left === 0) continue
      const bucket = counter.reason === 'last' || wall === undefined ? i : bucketOf(counter.reason, wall)
      if (bucket !== counter.last || i === sorted.length - 1) {
        counter.last = bucket
        counter.left--
        reasons.push(counter.reason)
      }
    }
    return { publish, keep: reasons.length > 0, reasons }
  })
}
