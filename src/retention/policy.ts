import { formatDuration, isZeroDuration, type Duration } from './duration.js'

/**
 * A retention policy, as `[retention]` gives it: which publishes to keep. Each count keeps the
 * newest publish of that many buckets (the last N publishes, hours, days, ISO weeks, months,
 * years that have one); `keepWithin` keeps every publish that recent. Zero: the rule is off.
 */
export interface RetentionPolicy {
  readonly keepLast: number
  readonly keepHourly: number
  readonly keepDaily: number
  readonly keepWeekly: number
  readonly keepMonthly: number
  readonly keepYearly: number
  /** Every publish this close to the newest one; undefined: the rule is off. */
  readonly keepWithin: Duration | undefined
}

/** Whether the policy keeps nothing by any rule: it would forget every publish but the newest. */
export function isEmptyPolicy (p: RetentionPolicy): boolean {
  return p.keepLast === 0 && p.keepHourly === 0 && p.keepDaily === 0 && p.keepWeekly === 0 &&
    p.keepMonthly === 0 && p.keepYearly === 0 && (p.keepWithin === undefined || isZeroDuration(p.keepWithin))
}

/** The policy in words: "keep the last 3, 24 hourly, 14 daily publishes, and all within 48h of the newest". */
export function describePolicy (p: RetentionPolicy): string {
  const kept = ([[p.keepLast, 'the last'], [p.keepHourly, 'hourly'], [p.keepDaily, 'daily'], [p.keepWeekly, 'weekly'], [p.keepMonthly, 'monthly'], [p.keepYearly, 'yearly']] as const)
    .filter(([n]) => n > 0)
  const counts = kept.map(([n, what]) => what === 'the last' ? `the last ${n}` : `${n} ${what}`)
  // One rule keeping one: "the last 1 publish", as a single count reads.
  const noun = kept.length === 1 && kept[0]?.[0] === 1 ? 'publish' : 'publishes'
  const parts = counts.length > 0 ? [`${counts.join(', ')} ${noun}`] : []
  if (p.keepWithin !== undefined && !isZeroDuration(p.keepWithin)) parts.push(`all within ${formatDuration(p.keepWithin)} of the newest`)
  return parts.length === 0 ? 'keep only the newest publish' : `keep ${parts.join(', and ')}`
}
