import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import * as dagPb from '@ipld/dag-pb'
import { fixedSize } from 'ipfs-unixfs-importer/chunker'
import { balanced } from 'ipfs-unixfs-importer/layout'
import type { CID } from 'multiformats/cid'
import { fetchBytes } from '../helpers/trustless.js'
import { fileIn, serviceHolding, unixfsTree } from '../helpers/unixfs-tree.js'

describe('the gateway\'s Range requests', () => {
  it('answers a single range of a file with 206 and Content-Range, reading only the blocks that hold it', async () => {
    const bytes = randomBytes(10_000)
    // 1000-byte leaves, 3 links a node: the range's blocks are a few of the tree's.
    const tree = await unixfsTree({ 'f.bin': bytes }, { chunker: fixedSize({ chunkSize: 1000 }), layout: balanced({ maxChildrenPerNode: 3 }) })
    const file = fileIn(tree, 'f.bin')
    // Every leaf but the fifth (bytes 4000-4999) is left out: a range inside it still comes whole.
    const leaves: CID[] = []
    const walk = (cid: CID): void => {
      const block = tree.blocks.get(cid.toString())
      if (cid.code !== dagPb.code || block === undefined) { leaves.push(cid); return }
      for (const link of dagPb.decode(block.bytes).Links) walk(link.Hash)
    }
    walk(file.cid)
    expect(leaves.length).toBe(10)
    const { url } = await serviceHolding(tree, leaves.filter((_, i) => i !== 4).map(c => c.toString()))
    const path = `/ipfs/${file.cid.toString()}`
    const inner = await fetchBytes(url, path, { headers: { range: 'bytes=4100-4899' } })
    expect(inner).toMatchObject({ status: 206, complete: true, headers: { 'content-range': 'bytes 4100-4899/10000', 'content-length': '800', 'accept-ranges': 'bytes', etag: `"${file.cid.toString()}"` } })
    expect(inner.body.equals(bytes.subarray(4100, 4900))).toBe(true)
    // A range whose blocks are gone is answered 404 before any byte, never a hang or a dropped connection.
    expect((await fetchBytes(url, path, { headers: { range: 'bytes=0-10' } })).status).toBe(404)
  })

  it('serves bytes=a-b, bytes=a- and bytes=-n of files and raw blocks, 416 past the end, and the whole for what it does not serve', async () => {
    const bytes = randomBytes(3_000)
    const tree = await unixfsTree({ 'f.bin': bytes, 'small.txt': Buffer.from('hello, ranges') }, { chunker: fixedSize({ chunkSize: 1000 }) })
    const { url } = await serviceHolding(tree)
    const file = `/ipfs/${fileIn(tree, 'f.bin').cid.toString()}`
    const small = fileIn(tree, 'small.txt')
    const block = `/ipfs/${small.cid.toString()}?format=raw`
    const cases: Array<[string, string, Buffer, string]> = [
      [file, 'bytes=0-0', bytes.subarray(0, 1), 'bytes 0-0/3000'],
      [file, 'bytes=999-1000', bytes.subarray(999, 1001), 'bytes 999-1000/3000'],
      [file, 'bytes=2500-', bytes.subarray(2500), 'bytes 2500-2999/3000'],
      [file, 'bytes=-10', bytes.subarray(2990), 'bytes 2990-2999/3000'],
      [file, 'bytes=-5000', bytes, 'bytes 0-2999/3000'],
      [file, 'bytes=2000-9999', bytes.subarray(2000), 'bytes 2000-2999/3000'],
      [block, 'bytes=7-', Buffer.from('ranges'), 'bytes 7-12/13'],
      [block, 'bytes=0-4', Buffer.from('hello'), 'bytes 0-4/13']
    ]
    for (const [path, range, body, contentRange] of cases) {
      const answer = await fetchBytes(url, path, { headers: { range } })
      expect(answer, `${path} ${range}`).toMatchObject({ status: 206, complete: true, headers: { 'content-range': contentRange, 'content-length': String(body.byteLength) } })
      expect(answer.body.equals(body), `${path} ${range}`).toBe(true)
    }
    for (const path of [file, block]) {
      const whole = await fetchBytes(url, path)
      expect(whole.headers['accept-ranges']).toBe('bytes')
      const size = whole.body.byteLength
      for (const range of [`bytes=${size}-`, `bytes=${size + 10}-${size + 20}`, 'bytes=-0']) {
        const answer = await fetchBytes(url, path, { headers: { range } })
        expect(answer, `${path} ${range}`).toMatchObject({ status: 416, headers: { 'content-range': `bytes */${size}` } })
      }
      // Several ranges, a malformed one, another unit, an If-Range of another version: the whole, 200.
      for (const [range, ifRange] of [['bytes=0-1,5-6', undefined], ['bytes=5-1', undefined], ['items=0-1', undefined], ['bytes=0-1', '"other"']]) {
        const answer = await fetchBytes(url, path, { headers: { range: range as string, ...(ifRange === undefined ? {} : { 'if-range': ifRange }) } })
        expect(answer.status, `${path} ${range as string}`).toBe(200)
        expect(answer.body.equals(whole.body)).toBe(true)
      }
    }
    const head = await fetchBytes(url, file, { method: 'HEAD', headers: { range: 'bytes=100-199' } })
    expect(head).toMatchObject({ status: 206, body: Buffer.alloc(0), headers: { 'content-length': '100', 'content-range': 'bytes 100-199/3000' } })
  })
})
