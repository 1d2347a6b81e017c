import { ContentNotFoundError, PruneRefusedError } from '../../errors.js'
import type { Manifest } from '../../snapshot/index.js'
import { isUnusable, MAX_HISTORY, walkHistory, type FetchInit } from '../read/index.js'
import type { Repository } from '../repository.js'

/** The publishes of one chain: each manifest (with its CID) newest first, and the `/1` snapshots in it. */
export interface Chain {
  readonly manifests: Array<{ readonly cid: string, readonly manifest: Manifest }>
  readonly v1: string[]
}

/**
 * The pointer's chain, whole. A publish this device cannot read is refused: what it cannot read,
 * a prune cannot tell apart from garbage.
 */
export async function liveChain (repository: Repository, head: string, fetch: FetchInit): Promise<Chain> {
  const chain: Chain = { manifests: [], v1: [] }
  try {
    await walkInto(chain, repository, head, fetch)
  } catch (err) {
    if (!isUnusable(err)) throw err
    throw new PruneRefusedError(`the history holds a publish this device cannot read (${(err as Error).message}): nothing is pruned. Run \`cidsync verify --full\` to see which`, { cause: err })
  }
  const last = chain.manifests.at(-1)
  if (chain.manifests.length + chain.v1.length >= MAX_HISTORY && last?.manifest.previous !== null) {
    throw new PruneRefusedError('the history is longer than one walk reads: nothing is pruned')
  }
  return chain
}

/**
 * A chain a forget replaced, read as far as it still is: a prune run before, or cut short, may have
 * deleted its oldest part already. What cannot be read is left where it is.
 */
export async function replacedChain (repository: Repository, head: string, fetch: FetchInit): Promise<Chain> {
  const chain: Chain = { manifests: [], v1: [] }
  try {
    await walkInto(chain, repository, head, fetch)
  } catch (err) {
    if (!(err instanceof ContentNotFoundError) && !isUnusable(err)) throw err
  }
  return chain
}

/** Walks the chain from `head` into `chain`, newest first: what was read stays when the walk stops. */
async function walkInto (chain: Chain, repository: Repository, head: string, fetch: FetchInit): Promise<void> {
  for await (const { entry, manifest } of walkHistory(repository.home, head, repository.manifestCache, fetch)) {
    if (manifest === undefined) chain.v1.push(entry.cid)
    else chain.manifests.push({ cid: entry.cid, manifest })
  }
}
