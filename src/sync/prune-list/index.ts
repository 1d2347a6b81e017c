/**
 * A prune's list of the content it is about to delete (docs/retention.md, "Prune and a publish at
 * once"): announced by the prune before its last pointer check, read by every publish once its
 * pointer moved, so that content a new publish names is stored again rather than lost.
 */
export { announcePruneList, listPointer, pruneListNetwork, readPruneList, PRUNE_LIST_ENGINE } from './list-pointer.js'
export type { AnnouncedList } from './list-pointer.js'
export { checkPruneList } from './publish-check.js'
export type { PruneListCheck } from './publish-check.js'
