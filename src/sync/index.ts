/**
 * The sync jobs: publish (snapshot, upload, deal, pointer with merge, name) and restore, with
 * their durable state beside the index.
 */
export { publish, SNAPSHOT_PROFILE, MAX_MERGES } from './publish.js'
export type { Published, PublishComponents, PublishInit } from './publish.js'
export { restore } from './restore.js'
export type { RestoreInit, RestoreResult } from './restore.js'
export { mergeIndex, changeMarker, acceptsUnencrypted } from './merge.js'
export { JobStore } from './job-store.js'
export type { PublishJob, PublishStep } from './job-store.js'
export { SyncRunner } from './runner.js'
export type { PublishStatus, ReconcileStatus, SyncRunnerComponents } from './runner.js'
export type { SyncEvent, SyncEventListener } from './sync-event.js'
export { reconcile } from './reconcile.js'
export { prepareSyncState } from './start-up.js'
export type { PreparedSyncState, SyncRecovery, PrepareSyncStateInit } from './start-up.js'
export { removeLeftovers } from './leftovers.js'
export type { LeftoversRemoved } from './leftovers.js'
export { KEPT_BACKUPS } from './restore.js'
export type { Reconciled, ReconcileComponents } from './reconcile.js'
export { hasSyncState, SYNC_STATE_FILE } from './sync-state-file.js'
