/**
 * The local index: one SQLite file in the state dir, opened once, WAL, versioned schema.
 */

export type { Entry, EntryChange, KnownFile, KnownRow, FolderTotals, KnownDevice, ListOptions } from './entries.js'
export type { EntryKind, FileMeta } from './file-meta.js'
export { isDirPath, sameMeta } from './file-meta.js'
export { EntryStore, utf8Before } from './entries.js'
export { SCHEMA_VERSION, CONTENT_SCHEMA_VERSION, META_SCHEMA_VERSION } from './migrations.js'
export { loadOrCreateDeviceId, readDeviceId, DEVICE_ID_FILE } from './device-id.js'
export type { DeviceIdRecovery } from './device-id.js'
export { RemoteStore, DEAL_OVERDUE_MS } from './remote.js'
export { SegmentStore, checkSegment, checkSegmentAsync } from './segments.js'
export { ContentRecordStore, walkStoredFiles } from './content-records.js'
export type { StoredContentRow, IndexRecordText, NewContentRecord, UnstoredFile, StoredFile } from './content-records.js'
export type { SegmentRange, RecordedChain, IncomingDevice, DeviceState } from './segments.js'
export type { RemoteFile, RemoteName, DealRecord, RemoteState } from './remote.js'
export { openIndexRecovering, moveAside } from './recover.js'
export type { OpenedIndex } from './recover.js'
export { isDamageError, LEAN_CACHE_KIB } from './open.js'
export type { MergeResult } from './sync-sql.js'
export { INDEX_FILE, indexPath, openIndex } from './open-index.js'
export { checkIndexFile } from './check-file.js'
export type { Index, OpenIndexInit } from './open-index.js'
