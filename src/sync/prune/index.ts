/** Prune: delete every object no kept publish needs, from the service and, through their logs, the mirrors. */
export { prune } from './prune.js'
export type { PruneInit, PruneProgress, Pruned } from './prune.js'
export type { RepackClaim, RepackInit, Repacked } from './repack.js'
export { checkOwnPublishHeld, contended } from './own-publish-held.js'
export { notePruned } from './outcome.js'
export type { RefusedDeletes } from './refusals.js'
