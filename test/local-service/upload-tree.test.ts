import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { CID_PROFILES, bytesCid, cidProfile } from '../../src/content/index.js'
import { MAX_PATH_DEPTH, SHARDING_BYTES, segmentsOf, uploadRoots } from '../../src/local-service/upload-tree.js'
import { HttpFailure } from '../../src/local-service/http.js'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { unixfsTree } from '../helpers/unixfs-tree.js'

type Service = Awaited<ReturnType<typeof localServiceUnderTest>>

async function add (service: Service, files: Record<string, Uint8Array>, query: string): Promise<{ status: number, text: string }> {
  const form = new FormData()
  for (const [name, bytes] of Object.entries(files)) form.append('file', new Blob([bytes], { type: 'application/octet-stream' }), name)
  const response = await fetch(`${service.local.url}/api/v0/add?${query}`, { method: 'POST', body: form, headers: { authorization: `Bearer ${service.apiKey}` } })
  return { status: response.status, text: await response.text() }
}

const big = randomBytes(300 * 1024)
const FILES = { 'a.txt': Buffer.from('a'), 'sub/b.txt': Buffer.from('b'), 'sub/deeper/big.bin': big, 'sub/Ünïcode ☃.txt': Buffer.from('snow') }
const under = (root: string): Record<string, Uint8Array> => Object.fromEntries(Object.entries(FILES).map(([p, b]) => [`${root}/${p}`, b]))

/** A file as the upload route hands it to {@link uploadRoots}. */
function added (name: string, text: string): { cid: string, size: number, dagSize: number, name: string, mime: string } {
  return { cid: bytesCid(Buffer.from(text), cidProfile('kubo-cidv1')).toString(), size: text.length, dagSize: text.length, name, mime: 'text/plain' }
}

function failure (run: () => unknown): HttpFailure | undefined {
  try { run() } catch (err) { if (err instanceof HttpFailure) return err; throw err }
  return undefined
}

describe.skipIf(EXTERNAL)('local service: a folder sent to /api/v0/add', () => {
  it('makes the directories ipfs add makes, answers the root alone, and lists it once', async () => {
    const service = await localServiceUnderTest()
    for (const [query, options] of [['cid-version=1', { cidVersion: 1 as const, rawLeaves: true }], ['cid-version=0', { cidVersion: 0 as const, rawLeaves: false, reduceSingleLeafToSelf: true }]] as const) {
      const expected = await unixfsTree(FILES, options)
      const answer = await add(service, under('top'), `${query}&wrap-with-directory=false`)
      expect(answer.status, query).toBe(200)
      const body = JSON.parse(answer.text) as { Name: string, Hash: string, Size: string }
      expect(body, query).toMatchObject({ Name: 'top', Hash: expected.root.toString() })
      const blocks = [...expected.blocks.values()].reduce((sum, b) => sum + b.bytes.byteLength, 0)
      expect(Number(body.Size), query).toBe(blocks)
      const served = await fetch(`${service.local.url}/ipfs/${body.Hash}/sub/deeper/big.bin`)
      expect(Buffer.from(await served.arrayBuffer()).equals(big), query).toBe(true)
    }
    const listed = []
    for await (const record of service.clients.files()) listed.push([record.fileName, record.fileSizeInBytes])
    const bytes = Object.values(FILES).reduce((sum, b) => sum + b.byteLength, 0)
    expect(listed).toEqual([['top', bytes], ['top', bytes]])
  })

  it('answers one line a root when the files make several', async () => {
    const service = await localServiceUnderTest()
    const answer = await add(service, { 'one/a.txt': Buffer.from('a'), 'b.txt': Buffer.from('b'), 'two/c.txt': Buffer.from('c') }, 'cid-version=1')
    expect(answer.status).toBe(200)
    const lines = answer.text.trim().split('\n').map(l => JSON.parse(l) as { Name: string })
    expect(lines.map(l => l.Name)).toEqual(['one', 'b.txt', 'two'])
  })

  it('refuses a path that climbs out, repeats, or clashes with a file, and lists nothing', async () => {
    const service = await localServiceUnderTest()
    for (const files of [{ '../x.txt': 'x' }, { 'd/../x.txt': 'x' }, { '/etc/x.txt': 'x' }, { 'd/x.txt': 'x', 'd//x.txt': 'y' }, { 'd/x': 'x', 'd/x/y': 'y' }]) {
      const answer = await add(service, Object.fromEntries(Object.entries(files).map(([n, t]) => [n, Buffer.from(t)])), 'cid-version=1')
      expect(answer.status, Object.keys(files).join(' ')).toBe(400)
    }
    const listed = []
    for await (const record of service.clients.files()) listed.push(record)
    expect(listed).toEqual([])
  })
})

describe('uploadRoots', () => {
  it('keeps files sent without a path as they were: each a root, a name repeated or empty', () => {
    const files = [added('', 'one'), added('', 'two'), added('x.txt', 'three'), added('x.txt', 'four')]
    expect(uploadRoots(files, CID_PROFILES['kubo-cidv1'], () => {})).toEqual(files)
  })

  it('refuses a directory Kubo would shard, and a path deeper than it takes', () => {
    const name = 'n'.repeat(200)
    const many = Array.from({ length: Math.ceil(SHARDING_BYTES / (name.length + 36)) }, (_, i) => added(`d/${name}${i}`, `file ${i}`))
    expect(failure(() => uploadRoots(many, CID_PROFILES['kubo-cidv1'], () => {}))?.message).toContain('Kubo would shard it')
    expect(uploadRoots(many.slice(0, 100), CID_PROFILES['kubo-cidv1'], () => {})).toHaveLength(1)
    expect(failure(() => segmentsOf(Array.from({ length: MAX_PATH_DEPTH + 1 }, () => 'd').join('/')))?.status).toBe(400)
    expect(segmentsOf('./d//e/')).toEqual(['d', 'e'])
  })
})
