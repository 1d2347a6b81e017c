/**
 * Publishing: snapshot, upload, deal, pointer (merging another device's publish first), name;
 * with the guards that hold a publish back (drops, a pointer set back).
 */
export { currentPointer, fetchAndMerge } from './merge.js'
export type { PublishComponents, PublishInit, Published } from './publish-init.js'
export { MAX_MERGES, SNAPSHOT_PROFILE, publish } from './publish.js'
export { knownHead, noteSetBack, olderInChain } from './rollback.js'
