/**
 * The sync jobs: publish (snapshot, upload, deal, pointer with merge, name) and restore, with
 * their durable state beside the index. Each concept is a folder of its own (read/, state/,
 * verify/, publish/, restore/, storing/, mirrors/); this face gives what other rooms use.
 */
export { Repository } from './repository.js'
export type { PastOptions, RepositoryOptions } from './repository.js'
export { publish, SNAPSHOT_PROFILE, MAX_MERGES } from './publish/index.js'
export type { Published, PublishComponents, PublishInit } from './publish/index.js'
export { forget, planForget } from './forget/index.js'
export { prune } from './prune/index.js'
export { PRUNE_LIST_ENGINE, pruneListNetwork } from './prune-list/index.js'
export type { PruneInit, PruneProgress, Pruned, RepackClaim, RepackInit, Repacked } from './prune/index.js'
export type { ForgetInit, ForgetPlan, ForgetProgress, Forgotten } from './forget/index.js'
export {
  restore, KEPT_BACKUPS, getFiles, olderThanOwnDeletion, selectRows, selectTree, planRestore, recordSources,
  deletedStillThere, extraEntries, removableEntry, removeExtra, NOTE_TEXT, checkDownloadRoom, downloadFile, removeStaleDownloads, devicesAhead
} from './restore/index.js'
export type {
  RestoreComponents, RestoreInit, RestoreProgress, RestoreResult, GetFilesInit, GetFilesProgress, GetOutcome,
  PlannedEntry, ExtraEntry, HeldEntry, AttrsNote, SelectedTree, SelectRowsInit, DownloadFileInit,
  DownloadedFile, DeviceAhead, PointerAhead
} from './restore/index.js'
export {
  acceptsUnencrypted, walkHistory, walkEntries, publishAt, readPublish, cachedHistory,
  MAX_HISTORY, isUnusable, missingKey, fetchSegments, removeFetched, readContext, SNAPSHOTS_DIR,
  buildIndex, fetchV1Snapshot, pastIndex, PAST_DIR, checkOwnPublishIn
} from './read/index.js'
export type {
  HistoryEntry, ManifestCache, DownloadProgress, FetchInit, ReadContextOptions, BuiltPast, PastIndex
} from './read/index.js'
export { verify, runDrill, recordDrill, restorableStatus, historyStatus } from './verify/index.js'
export type {
  VerifyResult, VerifyComponents, VerifyInit, RestorableStatus, HistoryRow
} from './verify/index.js'
export {
  storeContent, contentSealing, contentLeftOut, ContentKeeper, CONTENT_FAILING_BOUND_MS, compactOwnIndex
} from './storing/index.js'
export type {
  StoreContentComponents, StoreContentInit, StoreContentResult, StoreContentProgress, NotStored,
  ContentStatus, ContentFolderStatus, ContentFailure
} from './storing/index.js'
export {
  MirrorReplicator, DEFAULT_MIRROR_TIMING, mirrorAdvice, mirrorStatus, drillMirror,
  logIndexContent, mirrorBehind
} from './mirrors/index.js'
export type {
  MirrorLink, MirrorTiming, MirrorPointerNote, ReplicatorState, MirrorStatus, MirrorBehind,
  MirrorDrillComponents, MirrorDrillOptions
} from './mirrors/index.js'
export {
  SyncStore, SyncStoreOwner, SYNC_SCHEMA_VERSION, ACTIVE_STEPS, removeDeadRunFiles,
  removeLeftovers, hasSyncState, SYNC_STATE_FILE
} from './state/index.js'
export type {
  LastPublished, RestoreRecord, PublishJob, PublishStep, ActiveStep, JobAt, SnapshotMade,
  UnusableJob, LeftoversRemoved, MirrorLog, ReplicaRow, MirrorRecord, ForgetRecord, PruneRecord, PrunePlanRecord
} from './state/index.js'
export type { SyncComponents, SyncService } from './sync-components.js'
export { SyncRunner } from './runner.js'
export type { RetentionStatus } from './runner.js'
export type { PublishStatus, ReconcileStatus, SyncRunnerComponents, PublishOptions } from './runner.js'
export type { SyncEvent, SyncEventListener } from './sync-event.js'
export { Scheduler } from './scheduler.js'
export type { ScheduleTiming, RetryPolicy, SchedulerInit } from './scheduler.js'
export { reconcile } from './reconcile.js'
export type { Reconciled, ReconcileComponents } from './reconcile.js'
export { prepareSyncState } from './start-up.js'
export type { PreparedSyncState, SyncRecovery, PrepareSyncStateInit } from './start-up.js'
