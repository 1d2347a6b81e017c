/**
 * Retention: which publishes a policy keeps, and why. Pure: it reads no clock, store or config of
 * its own, and deletes nothing.
 */
export { applyPolicy } from './apply-policy.js'
export type { ApplyOptions, Decision, Publish } from './apply-policy.js'
export { BUCKET_RULES, isoWeek } from './buckets.js'
export type { BucketRule } from './buckets.js'
export { DURATION_HELP, exactSeconds, exactSpanText, formatDuration, isCalendarDuration, isZeroDuration, parseDuration } from './duration.js'
export type { Duration } from './duration.js'
export { describePolicy, isEmptyPolicy } from './policy.js'
export type { RetentionPolicy } from './policy.js'
export { formatReasons, KEEP_REASONS } from './reasons.js'
export type { KeepReason } from './reasons.js'
export { isTimeZone, systemTimeZone, systemTimeZoneProblem } from './time-zone.js'
