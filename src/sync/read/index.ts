/**
 * Reading a publish: fetching and checking its manifest and segments, walking its history,
 * building a whole or past index from it, and the binding and policy a read must honour.
 */
export { buildIndex } from './build-index.js'
export { MAX_HISTORY, cachedHistory, nothingAtTime, publishAt, readPublish, walkEntries, walkHistory } from './history.js'
export type { HistoryEntry, ManifestCache, PublishAtTime } from './history.js'
export { unboundMayMerge } from './manifest-binding.js'
export { mergeManifest, parseChains } from './merge-manifest.js'
export { checkOwnPublishIn } from './own-publish-check.js'
export { PAST_DIR, openBuiltPast, pastIndex } from './past-index.js'
export type { BuiltPast, PastIndex } from './past-index.js'
export { SNAPSHOTS_DIR, readContext } from './read-context.js'
export type { ReadContextOptions } from './read-context.js'
export { scrubRestoredIndex } from './scrub-index.js'
export { fetchSegments, isGone, isUnusable, missingKey, removeDatabase, removeFetched } from './segment-fetch.js'
export type { DownloadProgress, FetchInit } from './segment-fetch.js'
export { SNAPSHOT_PROFILE } from './snapshot-profile.js'
export { acceptsUnencrypted } from './unencrypted-policy.js'
export { fetchV1Snapshot } from './v1-snapshot-fetch.js'
