/**
 * Restore drills: whether what the pointer names would restore, and the record status shows.
 */
export { failedDrill, historyStatus, recordDrill, restorableStatus, runDrill } from './drill.js'
export type { FailedDrill, HistoryRow, RestorableStatus } from './drill.js'
export { verify } from './verify.js'
export type { VerifyComponents, VerifyInit, VerifyResult } from './verify.js'
