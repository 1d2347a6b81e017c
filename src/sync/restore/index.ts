/**
 * Restore and get: choosing rows from an index, and putting files, links and directories in
 * place safely; a whole index restored from a publish.
 */
export { NOTE_TEXT } from './attrs.js'
export type { AttrsNote } from './attrs.js'
export { extraEntries, removeExtra } from './delete.js'
export type { ExtraEntry } from './delete.js'
export { checkDownloadRoom, downloadFile, removeStaleDownloads } from './download-file.js'
export type { DownloadFileInit, DownloadedFile } from './download-file.js'
export { getFiles } from './get-files.js'
export type { GetFilesInit, GetFilesProgress, GetOutcome } from './get-files.js'
export { planRestore } from './plan.js'
export type { PlannedEntry } from './plan.js'
export { KEPT_BACKUPS, restore } from './restore.js'
export type { RestoreComponents, RestoreInit, RestoreProgress, RestoreResult } from './restore.js'
export { safeComponents } from './safe-target.js'
export { olderThanOwnDeletion, selectRows } from './select-rows.js'
export type { SelectRowsInit } from './select-rows.js'
export { selectTree } from './select-tree.js'
export type { SelectedTree } from './select-tree.js'
export { recordSources } from './record-sources.js'
export type { RecordSources, RecordSourcesInit } from './record-sources.js'
export type { RecordFallback } from './newer-records.js'
