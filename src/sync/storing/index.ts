/**
 * Storing content: uploading the files of folders that store, the daemon's keeper that runs
 * it, and the failures waiting for a retry.
 */
export type { ContentFailure } from './failures.js'
export { CONTENT_FAILING_BOUND_MS, ContentKeeper } from './keeper.js'
export type { ContentFolderStatus, ContentStatus } from './keeper.js'
export { contentLeftOut, contentSealing, storeContent } from './store-content.js'
export type { NotStored, StoreContentComponents, StoreContentInit, StoreContentProgress, StoreContentResult } from './store-content.js'
export { compactOwnIndex } from './content-index-compact.js'
