/**
 * The sync state store: `sync.sqlite` beside the index (its schema, keys and typed accessors),
 * the publish job it records, the mirrors' log, the content index, and the temp files a killed
 * job leaves behind.
 */
export type { LastPublished } from './keys.js'
export { removeDeadRunFiles, removeLeftovers } from './leftovers.js'
export type { LeftoversRemoved } from './leftovers.js'
export { SYNC_SCHEMA_VERSION } from './migrations.js'
export type { MirrorLog, MirrorRecord, ReplicaRow } from './mirror-log.js'
export { ACTIVE_STEPS, jobFiles } from './publish-job.js'
export type { ActiveStep, JobAt, PublishJob, PublishStep, SnapshotMade, UnusableJob } from './publish-job.js'
export { SYNC_STATE_FILE, hasSyncState } from './state-file.js'
export { SyncStoreOwner } from './store-owner.js'
export { SyncStore } from './store.js'
export type { Refusal, RestoreRecord } from './store.js'
export { PlainRoots } from './plain-roots.js'
export type { ContentIndexState, IndexObjectState, KnownRecord, ListingHead } from './content-index.js'
export type { PlainNode, PlainRootRow } from './plain-roots.js'
export type { ForgetRecord, ObjectCount, PruneRecord, PrunePlanRecord, PruneRefusedRecord, RepackPlanRecord, RetentionRecords } from './retention-records.js'
export type { PruneListState } from './prune-list.js'
export { ListedObjects } from './listed-objects.js'
export type { AbandonedKind, AbandonedUpload, AbandonedUploads } from './abandoned-uploads.js'
