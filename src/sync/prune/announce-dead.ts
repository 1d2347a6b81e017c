import { MAX_PRUNE_LIST_OBJECTS } from '../../snapshot/index.js'
import { announcePruneList, type AnnouncedList } from '../prune-list/index.js'
import type { Repository } from '../repository.js'
import type { CandidateKind } from './object-sets.js'

interface Dead { readonly cid: string, readonly kind: CandidateKind, readonly size: number }

/**
 * What one run may delete: content past what one prune list names waits for the next run, since
 * only content a list names may be deleted (a publish could not know of the rest).
 */
export function withinListBound<D extends Dead> (dead: readonly D[]): { readonly dead: D[], readonly deferred: number } {
  let content = 0
  const kept = dead.filter(d => d.kind !== 'content' || ++content <= MAX_PRUNE_LIST_OBJECTS)
  return { dead: kept, deferred: dead.length - kept.length }
}

/**
 * Announces the content about to be deleted (docs/retention.md, "Prune and a publish at once").
 * Nothing is announced when no content dies: a publish names content, never the others.
 */
export async function announceDead (repository: Repository, dead: readonly Dead[], signal?: AbortSignal): Promise<Partial<AnnouncedList>> {
  const content = dead.filter(d => d.kind === 'content').map(d => d.cid)
  if (content.length === 0) return {}
  return await announcePruneList(repository, content, signal)
}

/** The list an earlier prune announced, once this one's replaced it: logged for the mirrors too. */
export async function dropPreviousList (repository: Repository, previous: string | undefined, signal?: AbortSignal): Promise<void> {
  if (previous === undefined) return
  const { removed } = await repository.objects.deleteMany([previous], { signal })
  repository.store.mirrorLog.logDeletes(removed)
}
