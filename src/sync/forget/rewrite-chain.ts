import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { fileCid } from '../../content/index.js'
import { sealManifest, type Manifest } from '../../snapshot/index.js'
import { makeDirsSync } from '../../util/make-dirs.js'
import { STATE_NAMES } from '../../config/index.js'
import { SNAPSHOT_PROFILE } from '../read/index.js'
import type { Repository } from '../repository.js'
import { marksChanged, type ChainPublish } from './forget-plan.js'
import type { ForgetProgress } from './forget-progress.js'

/** A kept publish as the new chain holds it: its CID before and after (the same where nothing before it changed). */
export interface Relinked {
  readonly was: string
  readonly cid: string
}

/**
 * Links the kept publishes, oldest first, each to the kept one before it: a manifest whose
 * `previous` or labels change is sealed again and uploaded, with every other field as it was. The oldest
 * publishes, up to the first one forgotten, keep their CIDs. A manifest without a binding is
 * bound to this chain. The new head carries `replaced`: the chains a prune must keep a while.
 * Answers each kept publish's new CID, newest last. Nothing moves the
 * pointer here: killed, the new manifests are unreferenced objects a prune removes.
 */
export async function relinkChain (repository: Repository, kept: readonly ChainPublish[], replaced: NonNullable<Manifest['replaced']>, init: { readonly signal?: AbortSignal, readonly onProgress?: (event: ForgetProgress) => void }): Promise<Relinked[]> {
  const { config, passphrase } = repository
  const dir = join(config.stateDir, STATE_NAMES.snapshots)
  makeDirsSync(dir, 0o700)
  const relinked: Relinked[] = []
  let previous: string | null = null
  let changed = false
  const oldestFirst = [...kept].reverse()
  for (const publish of oldestFirst) {
    const { manifest } = publish
    const linksBefore = manifest === undefined ? null : manifest.previous
    if (manifest === undefined || (!changed && linksBefore === previous && !marksChanged(publish))) {
      // A `/1` snapshot has no link to change: it is only ever the chain's oldest.
      relinked.push({ was: publish.cid, cid: publish.cid })
      previous = publish.cid
      continue
    }
    changed = true
    // The replaced chains ride in the new head alone, where a prune reads them.
    const { replaced: _earlier, marks: _labels, ...body } = manifest
    const head = publish === oldestFirst.at(-1)
    const next: Manifest = {
      ...body, previous, namespace: manifest.namespace ?? config.namespace, network: manifest.network ?? config.network,
      publishedAs: manifest.publishedAs ?? publish.cid, ...(head ? { replaced } : {}),
      // The labels left after `forget --unmark`: usually the manifest's own.
      ...(publish.marks.length > 0 ? { marks: [...publish.marks] } : {})
    }
    const path = join(dir, `forget-${process.pid}-${relinked.length}.manifest`)
    try {
      await sealManifest({ path, manifest: next, encryption: config.snapshot.encryption, stateDir: config.stateDir, passphrase, signal: init.signal })
      const { cid } = await fileCid(path, SNAPSHOT_PROFILE, { signal: init.signal })
      await repository.objects.put(path, SNAPSHOT_PROFILE, { expectedCid: cid.toString(), signal: init.signal })
      const text = cid.toString()
      repository.manifestCache.put(text, JSON.stringify({ kind: 'manifest', manifest: next }))
      relinked.push({ was: publish.cid, cid: text })
      previous = text
      init.onProgress?.({ type: 'forget:relinked', detail: { was: publish.cid, cid: text } })
    } finally {
      await rm(path, { force: true })
    }
  }
  return relinked
}
