import type { BucketRule } from './buckets.js'
import { formatDuration } from './duration.js'
import type { RetentionPolicy } from './policy.js'

/**
 * Why a publish is kept: `newest` (the newest publish, always), `pointer` (the one the pointer
 * names, always), `device` (a device's newest publish, when asked), `marked` (a user's label), `within` (`keep_within`), `last` (`keep_last`), or a
 * bucket rule (`keep_hourly` ... `keep_yearly`).
 */
export type KeepReason = 'newest' | 'pointer' | 'device' | 'marked' | 'within' | 'last' | BucketRule

/** The order reasons are listed in: the ones no policy can take away first. */
export const KEEP_REASONS: readonly KeepReason[] = ['newest', 'pointer', 'device', 'marked', 'within', 'last', 'hourly', 'daily', 'weekly', 'monthly', 'yearly']

/**
 * A publish's reasons in one line, as `cidsync forget` lists them: "newest, within 48h, daily,
 * weekly". Empty for a publish no rule keeps. The policy, when given, adds `keep_within`'s span;
 * the labels, when given, follow `marked` quoted as JSON strings (the caller neutralises what it prints).
 */
export function formatReasons (reasons: readonly KeepReason[], policy?: RetentionPolicy, marks: readonly string[] = []): string {
  const within = policy?.keepWithin === undefined ? 'within' : `within ${formatDuration(policy.keepWithin)}`
  // Quoted as JSON: a label holding a quote must not read as several labels, or as rules.
  const marked = marks.length === 0 ? 'marked' : `marked ${marks.map(m => JSON.stringify(m)).join(', ')}`
  return [...reasons]
    .sort((a, b) => KEEP_REASONS.indexOf(a) - KEEP_REASONS.indexOf(b))
    .map(reason => reason === 'within' ? within : reason === 'marked' ? marked : reason)
    .join(', ')
}
