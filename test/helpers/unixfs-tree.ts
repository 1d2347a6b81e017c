import * as dagPb from '@ipld/dag-pb'
import { importer, type ImportCandidate, type ImporterOptions } from 'ipfs-unixfs-importer'
import { CID } from 'multiformats/cid'
import { startLocalService, type LocalService } from '../../src/local-service/index.js'
import { openServiceDatabase } from '../../src/local-service/store.js'
import { BlockStore } from '../../src/local-service/blocks.js'
import { useTempDir } from './temp-dir.js'
import { onTestFinished } from 'vitest'

/** A UnixFS tree as ipfs-unixfs-importer (Helia's, not cidsync's) builds it: its blocks and its root. */
export interface Tree { readonly root: CID, readonly blocks: ReadonlyMap<string, { cid: CID, bytes: Uint8Array }> }

/** `files` (path → bytes) wrapped in one directory, as `ipfs add -r` would make it. */
export async function unixfsTree (files: Record<string, Uint8Array>, options: Partial<ImporterOptions> = {}): Promise<Tree> {
  const blocks = new Map<string, { cid: CID, bytes: Uint8Array }>()
  const blockstore = {
    put: async (cid: CID, bytes: Uint8Array) => { blocks.set(cid.toString(), { cid, bytes }); return cid },
    get: async (cid: CID) => blocks.get(cid.toString())?.bytes,
    has: async (cid: CID) => blocks.has(cid.toString())
  }
  const candidates: ImportCandidate[] = Object.entries(files).map(([path, content]) => ({ path: `root/${path}`, content }))
  let root: CID | undefined
  for await (const entry of importer(candidates, blockstore as unknown as Parameters<typeof importer>[1], { cidVersion: 1, rawLeaves: true, wrapWithDirectory: false, ...options })) {
    if (entry.path === 'root') root = CID.parse(entry.cid.toString())
  }
  if (root === undefined) throw new Error('the importer made no root directory')
  return { root, blocks }
}

/** A local service whose data dir holds `blocks` (all but those named in `leaveOut`), started for this test. */
export async function serviceHolding (tree: Tree, leaveOut: readonly string[] = []): Promise<{ local: LocalService, url: string, dir: string }> {
  const dir = await useTempDir()
  const db = await openServiceDatabase(dir)
  const store = new BlockStore(dir, db)
  for (const { cid, bytes } of tree.blocks.values()) if (!leaveOut.includes(cid.toString())) store.put(cid, bytes)
  store.close()
  db.close()
  const local = await startLocalService({ dir })
  onTestFinished(async () => { await local.stop() })
  return { local, url: local.url, dir }
}

/** The CID and block of the entry `name` directly under the tree's root. */
export function fileIn (tree: Tree, name: string): { cid: CID, bytes: Uint8Array } {
  const root = tree.blocks.get(tree.root.toString())
  const link = root === undefined ? undefined : dagPb.decode(root.bytes).Links.find(l => l.Name === name)
  const found = link === undefined ? undefined : tree.blocks.get(link.Hash.toString())
  if (found === undefined) throw new Error(`no ${name} under the tree's root`)
  return found
}
