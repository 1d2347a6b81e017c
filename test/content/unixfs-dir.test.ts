import { describe, expect, it } from 'vitest'
import { importer } from 'ipfs-unixfs-importer'
import { fixedSize } from 'ipfs-unixfs-importer/chunker'
import { balanced } from 'ipfs-unixfs-importer/layout'
import * as dagPb from '@ipld/dag-pb'
import { CID_PROFILES, CidBuilder, directoryNode, estimatedDirectorySize, type CidProfile, type DirectoryEntry } from '../../src/content/index.js'

const encoder = new TextEncoder()

function fileEntry (name: string, text: string, profile: CidProfile): DirectoryEntry {
  return { name, link: new CidBuilder(profile).update(encoder.encode(text)).finishLink() }
}

/** The directory ipfs-unixfs-importer (Helia's, not cidsync's) makes of these files. */
async function importerDirectory (files: Record<string, string>, profile: CidProfile): Promise<string> {
  const blockstore = { put: async () => {}, get: async () => { throw new Error('unused') } }
  let root = ''
  for await (const entry of importer(Object.entries(files).map(([name, text]) => ({ path: `d/${name}`, content: encoder.encode(text) })), blockstore as never, {
    cidVersion: profile.cidVersion,
    rawLeaves: profile.rawLeaves,
    chunker: fixedSize({ chunkSize: profile.chunkSize }),
    layout: balanced({ maxChildrenPerNode: profile.maxLinks }),
    reduceSingleLeafToSelf: true,
    leafType: 'file'
  })) if (entry.path === 'd') root = entry.cid.toString()
  return root
}

describe('directoryNode', () => {
  it('makes the empty directory Kubo makes', () => {
    expect(directoryNode(CID_PROFILES['unixfs-v0-2015'], []).link.cid.toString()).toBe('QmUNLLsPACCz1vLxQVkXqqLX5R1X345qqfHbsf67hvA3Nn')
  })

  it.each(['unixfs-v0-2015', 'kubo-cidv1'] as const)('agrees with ipfs-unixfs-importer under %s, its links in byte order', async (name) => {
    const profile = CID_PROFILES[name]
    const files = { 'b.txt': 'bee', 'a é.txt': 'first', Z: 'upper case sorts first', 'a.txt': 'second', 'ä.txt': 'after every ASCII name' }
    const made = directoryNode(profile, Object.entries(files).map(([n, text]) => fileEntry(n, text, profile)))
    expect(made.link.cid.toString()).toBe(await importerDirectory(files, profile))
    expect(dagPb.decode(made.block).Links.map(l => l.Name)).toEqual(['Z', 'a é.txt', 'a.txt', 'b.txt', 'ä.txt'])
    expect(made.link.fileSize).toBe(Object.values(files).reduce((n, t) => n + Buffer.byteLength(t), 0))
  })

  it('estimates a directory as Kubo does: each name and CID in bytes', () => {
    const profile = CID_PROFILES['kubo-cidv1']
    const entry = fileEntry('ab', 'x', profile)
    expect(estimatedDirectorySize([entry, { ...entry, name: 'abc' }])).toBe(2 + 3 + 2 * entry.link.cid.bytes.byteLength)
  })
})
