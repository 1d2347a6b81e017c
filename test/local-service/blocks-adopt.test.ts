import { describe, it, expect, onTestFinished } from 'vitest'
import { readdirSync, statSync } from 'node:fs'
import { readFile, rename, symlink, truncate, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { CID } from 'multiformats/cid'
import { BlockStore } from '../../src/local-service/blocks.js'
import { openServiceDatabase } from '../../src/local-service/store.js'
import { CidBuilder, ObjectBlocksRecorder, type CidProfile } from '../../src/content/index.js'
import { useTempDir } from '../helpers/temp-dir.js'

const PROFILE: CidProfile = { name: 'kubo-cidv1', cidVersion: 1, chunkSize: 1024, maxLinks: 4, rawLeaves: true }
const openDescriptors = (): number => readdirSync('/proc/self/fd').length

describe('parts taken whole as packs (BlockStore.adopt)', () => {
  it('reads back every block of 300 taken packs with a bounded number of descriptors, none kept per pack', async () => {
    const dir = await useTempDir()
    const db = await openServiceDatabase(join(dir, 'service'))
    const store = new BlockStore(join(dir, 'service'), db)
    onTestFinished(() => { store.close(); db.close() })
    const files: Array<{ bytes: Buffer, cids: CID[] }> = []
    const before = openDescriptors()
    for (let i = 0; i < 300; i++) {
      const bytes = randomBytes(3 * 1024 + i)
      const path = join(dir, `part-${i}.bin`)
      await writeFile(path, bytes)
      const recorder = new ObjectBlocksRecorder()
      new CidBuilder(PROFILE, { onBlock: recorder.onBlock }).update(bytes).finish()
      const { leaves, nodes } = recorder.take()
      expect(await store.adopt(path, leaves.map(l => CID.decode(l)), PROFILE.chunkSize, nodes.map(([c, b]) => [CID.decode(c), b] as const), statSync(path))).toBe(true)
      files.push({ bytes, cids: leaves.map(l => CID.decode(l)) })
    }
    expect(openDescriptors() - before, 'descriptors kept by taking 300 packs').toBeLessThanOrEqual(2)
    for (const { bytes, cids } of files) {
      const back = Buffer.concat(await Promise.all(cids.map(async c => await store.get(c))))
      expect(back.equals(bytes)).toBe(true)
    }
    // Past the packs kept open for reads, a pack is opened for its read and closed after.
    expect(openDescriptors() - before, 'descriptors after reading every pack').toBeLessThanOrEqual(256 + 2)
  })

  it('takes nothing when the file linked is not the one the caller sized: swapped, truncated, grown or a symlink', async () => {
    const dir = await useTempDir()
    const db = await openServiceDatabase(join(dir, 'service'))
    const store = new BlockStore(join(dir, 'service'), db)
    onTestFinished(() => { store.close(); db.close() })
    const packs = (): string[] => readdirSync(join(dir, 'service', 'packs'))
    const attempts: Array<{ name: string, change: (path: string) => Promise<void> }> = [
      // Same size, other bytes: the leaves would be indexed under CIDs their bytes do not hash to.
      { name: 'swapped', change: async (path) => { await writeFile(`${path}.other`, randomBytes(5000)); await rename(`${path}.other`, path) } },
      { name: 'truncated', change: async (path) => { await truncate(path, 4000) } },
      { name: 'grown', change: async (path) => { await writeFile(path, randomBytes(100), { flag: 'a' }) } },
      { name: 'a symlink', change: async (path) => { await rename(path, `${path}.real`); await symlink(`${path}.real`, path) } }
    ]
    for (const { name, change } of attempts) {
      const bytes = randomBytes(5000)
      const path = join(dir, `part-${name}.bin`)
      await writeFile(path, bytes)
      const held = statSync(path)
      const recorder = new ObjectBlocksRecorder()
      new CidBuilder(PROFILE, { onBlock: recorder.onBlock }).update(bytes).finish()
      const { leaves, nodes } = recorder.take()
      await change(path)
      const before = name === 'a symlink' ? await readFile(`${path}.real`) : undefined
      await expect(store.adopt(path, leaves.map(l => CID.decode(l)), PROFILE.chunkSize, nodes.map(([c, b]) => [CID.decode(c), b] as const), held), name).rejects.toThrow(/changed before it was stored/)
      expect(packs(), `${name}: no pack left`).toEqual([])
      for (const leaf of leaves) expect(store.has(CID.decode(leaf)), `${name}: no leaf indexed`).toBe(false)
      // Nothing appended through the symlink to the file it names.
      if (before !== undefined) expect((await readFile(`${path}.real`)).equals(before), 'the file a symlink names is untouched').toBe(true)
    }
  })
})
