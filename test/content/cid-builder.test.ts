import { describe, it, expect } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { importer } from 'ipfs-unixfs-importer'
import { fixedSize } from 'ipfs-unixfs-importer/chunker'
import { balanced } from 'ipfs-unixfs-importer/layout'
import { bytesCid, cidProfile, CidBuilder, fileCid, fileCidSync, CID_PROFILE_NAMES, type CidProfile } from '../../src/content/index.js'
import { chachaBytes } from '../helpers/chacha-stream.js'
import { TEXT_VECTORS, STREAM_VECTORS } from './cid-vectors.js'
import { useTempDir } from '../helpers/temp-dir.js'

const encoder = new TextEncoder()

async function importerCid (bytes: Uint8Array, profile: CidProfile): Promise<string> {
  const blockstore = { put: async () => {}, get: async () => { throw new Error('unused') } }
  let last = ''
  for await (const entry of importer([{ content: bytes }], blockstore as never, {
    cidVersion: profile.cidVersion,
    rawLeaves: profile.rawLeaves,
    chunker: fixedSize({ chunkSize: profile.chunkSize }),
    layout: balanced({ maxChildrenPerNode: profile.maxLinks }),
    reduceSingleLeafToSelf: true,
    leafType: 'file'
  })) last = entry.cid.toString()
  return last
}

describe('CIDs equal to `ipfs add`', () => {
  it.each(TEXT_VECTORS)('$profile of $text', ({ text, profile, cid }) => {
    expect(bytesCid(encoder.encode(text), cidProfile(profile)).toString()).toBe(cid)
  })

  it.each(STREAM_VECTORS)('$profile of $length bytes from $seed', ({ seed, length, profile, cid }) => {
    expect(bytesCid(chachaBytes(seed, length), cidProfile(profile)).toString()).toBe(cid)
  })

  it('gives the same CID whatever slices the bytes arrive in', () => {
    const bytes = chachaBytes('slices', 3 * 262144 + 17)
    const profile = cidProfile('kubo-cidv1')
    const builder = new CidBuilder(profile)
    for (let offset = 0, step = 1; offset < bytes.length; offset += step, step = (step * 7 + 3) % 100_003) {
      builder.update(bytes.subarray(offset, offset + step))
    }
    expect(builder.finish().toString()).toBe(bytesCid(bytes, profile).toString())
  })

  it.each(CID_PROFILE_NAMES)('%s: leaves hashed as they come and leaves gathered whole give the same CID, in any slices', async (name) => {
    const profile = { ...cidProfile(name), chunkSize: 64 }
    for (const length of [0, 1, 63, 64, 65, 64 * 3, 64 * profile.maxLinks + 1]) {
      const bytes = chachaBytes(`leaves-${length}`, length)
      // Told of each block, a builder gathers every leaf; without, raw leaves are hashed as they come.
      const gathered = new CidBuilder(profile, { onBlock: () => {} })
      const streamed = new CidBuilder(profile)
      for (let offset = 0, step = 1; offset < length; offset += step, step = (step * 5 + 2) % 97) {
        gathered.update(bytes.subarray(offset, offset + step))
        streamed.update(bytes.subarray(offset, offset + step))
      }
      streamed.update(new Uint8Array(0))
      const cid = await importerCid(bytes, profile)
      expect(gathered.finish().toString(), `${name}, ${length} bytes`).toBe(cid)
      expect(streamed.finish().toString(), `${name}, ${length} bytes`).toBe(cid)
    }
  })

  // Deeper trees than the vectors reach: a node of nodes with a partial last branch.
  it.each(CID_PROFILE_NAMES)('agrees with ipfs-unixfs-importer for %s over many chunk counts', async (name) => {
    const profile = { ...cidProfile(name), chunkSize: 64 }
    for (const length of [0, 1, 64, 65, 64 * 5, 64 * profile.maxLinks, 64 * profile.maxLinks + 1, 64 * (profile.maxLinks * 2 + 3) + 9]) {
      const bytes = chachaBytes(`deep-${length}`, length)
      expect(bytesCid(bytes, profile).toString(), `${name}, ${length} bytes`).toBe(await importerCid(bytes, profile))
    }
  })
})

describe('file CIDs', () => {
  it('hashes files on disk, sync and async, like the bytes in memory', async () => {
    const dir = await useTempDir('cidsync-cid-')
    const path = join(dir, 'v0.bin')
    await writeFile(path, chachaBytes('chunk-v0-seed', 262145))
    const profile = cidProfile('unixfs-v0-2015')
    expect(fileCidSync(path, profile).cid.toString()).toBe('QmYyLxtzZyW22zpoVAtKANLRHpDjZtNeDjQdJrcQNWoRkJ')
    const result = await fileCid(path, profile)
    expect(result.cid.toString()).toBe('QmYyLxtzZyW22zpoVAtKANLRHpDjZtNeDjQdJrcQNWoRkJ')
    expect(result.size).toBe(262145)
  })

  it('refuses an unknown profile, naming the known ones', () => {
    expect(() => cidProfile('sha1')).toThrow(/unknown CID profile "sha1": use one of kubo-cidv1, unixfs-v0-2015, unixfs-v1-2025/)
  })
})
