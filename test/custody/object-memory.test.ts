import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { CidBuilder, cidProfile } from '../../src/content/index.js'
import { ObjectMemory, SLAB_BYTES, type FetchObjectBytes } from '../../src/custody/index.js'

const profile = cidProfile('kubo-cidv1')

/** Objects by CID, served into the slabs the memory gives, with every fetch counted. */
function objects (...contents: Buffer[]): { cids: string[], fetches: Map<string, number>, fetch: FetchObjectBytes, slabsSeen: Set<ArrayBufferLike> } {
  const byCid = new Map(contents.map(c => [new CidBuilder(profile).update(c).finish().toString(), c]))
  const fetches = new Map<string, number>()
  const slabsSeen = new Set<ArrayBufferLike>()
  const fetch: FetchObjectBytes = async (cid, { slab }) => {
    fetches.set(cid, (fetches.get(cid) ?? 0) + 1)
    const bytes = byCid.get(cid) as Buffer
    const out: Uint8Array[] = []
    for (let at = 0; at < bytes.byteLength; at += SLAB_BYTES) {
      const into = slab()
      slabsSeen.add(into.buffer)
      const piece = bytes.subarray(at, at + SLAB_BYTES)
      into.set(piece)
      out.push(into.subarray(0, piece.byteLength))
    }
    return out
  }
  return { cids: [...byCid.keys()], fetches, fetch, slabsSeen }
}

const join = (views: readonly Uint8Array[]): Buffer => Buffer.concat(views.map(v => Buffer.from(v)))

describe('the objects a restore holds in memory', () => {
  it('fetch a shared object once for every reader announced, keep it until the last lets it go, and give its slabs to the next object', async () => {
    const a = randomBytes(SLAB_BYTES + 1000)
    const b = randomBytes(3000)
    const { cids, fetches, fetch, slabsSeen } = objects(a, b)
    const [ca, cb] = cids as [string, string]
    const memory = new ObjectMemory(4 * SLAB_BYTES, fetch)
    memory.expect(ca, 3)
    const [one, two] = await Promise.all([memory.get(ca, a.byteLength, 8 * SLAB_BYTES), memory.get(ca, a.byteLength, 8 * SLAB_BYTES)])
    expect(join(one.range(0, a.byteLength)).equals(a)).toBe(true)
    expect(join(two.range(SLAB_BYTES - 10, 20)).equals(a.subarray(SLAB_BYTES - 10, SLAB_BYTES + 10))).toBe(true)
    memory.release(ca)
    memory.release(ca)
    expect(memory.held).toBe(2 * SLAB_BYTES)
    // The third reader never read it (a file already right): its release drops it all the same.
    memory.release(ca)
    expect(memory.held).toBe(0)
    expect(fetches.get(ca)).toBe(1)
    const held = await memory.own(cb, b.byteLength, 8 * SLAB_BYTES)
    expect(join(held.bytes.range(0, b.byteLength)).equals(b)).toBe(true)
    held.drop()
    expect(memory.held).toBe(0)
    // Both of a's slabs served again: no new shared memory for b.
    expect(slabsSeen.size).toBe(2)
  })

  it('fetch the next object announced once the one before is in, one ahead of its readers, and give back one let go unread', async () => {
    const [a, b, c, d] = [randomBytes(1000), randomBytes(2000), randomBytes(3000), randomBytes(4000)]
    const { cids, fetches, fetch } = objects(a, b, c, d)
    const [ca, cb, cc, cd] = cids as [string, string, string, string]
    const memory = new ObjectMemory(4 * SLAB_BYTES, fetch)
    memory.expect(ca, 1, a.byteLength)
    memory.expect(cb, 2, b.byteLength)
    memory.expect(cc, 1, c.byteLength)
    memory.expect(cd, 1, d.byteLength)
    const fetched = async (cid: string): Promise<void> => {
      for (let turn = 0; turn < 1000 && fetches.get(cid) === undefined; turn++) await new Promise(resolve => setImmediate(resolve))
    }
    await memory.get(ca, a.byteLength, 8 * SLAB_BYTES)
    await fetched(cb)
    expect(fetches.get(cb)).toBe(1)
    // One ahead: c waits for a reader of b.
    expect(fetches.get(cc)).toBeUndefined()
    memory.release(ca)
    const [one, two] = await Promise.all([memory.get(cb, b.byteLength, 8 * SLAB_BYTES), memory.get(cb, b.byteLength, 8 * SLAB_BYTES)])
    expect(join(one.range(0, b.byteLength)).equals(b) && join(two.range(0, b.byteLength)).equals(b)).toBe(true)
    expect(fetches.get(cb)).toBe(1)
    memory.release(cb)
    memory.release(cb)
    // c came in ahead; its one reader lets it go unread (a file that failed first): its slab goes back.
    memory.release(cc)
    await fetched(cc)
    for (let turn = 0; turn < 1000 && memory.held > 0; turn++) await new Promise(resolve => setImmediate(resolve))
    expect(memory.held).toBe(0)
    // Nothing read c, so nothing was fetched ahead of it.
    expect(fetches.get(cd)).toBeUndefined()
    const last = await memory.get(cd, d.byteLength, 8 * SLAB_BYTES)
    expect(join(last.range(0, d.byteLength)).equals(d)).toBe(true)
    memory.release(cd)
    expect(memory.held).toBe(0)
  })

  it('make a fetch wait while the budget is spent, first come first served, and let one larger than the whole budget go alone', async () => {
    const big = randomBytes(3 * SLAB_BYTES)
    const small = randomBytes(100)
    const { cids, fetch } = objects(big, small)
    const [cbig, csmall] = cids as [string, string]
    const memory = new ObjectMemory(2 * SLAB_BYTES, fetch)
    const first = await memory.own(cbig, big.byteLength, 8 * SLAB_BYTES)
    expect(memory.held).toBe(3 * SLAB_BYTES)
    let second = false
    const waiting = memory.own(csmall, small.byteLength, 8 * SLAB_BYTES).then((held) => { second = true; return held })
    await new Promise(resolve => setImmediate(resolve))
    expect(second).toBe(false)
    first.drop()
    const held = await waiting
    expect(join(held.bytes.range(0, 100)).equals(small)).toBe(true)
    held.drop()
    expect(memory.held).toBe(0)
  })

  it('refuses an object name that is not a CID as cidsync writes one, before fetching anything', async () => {
    const { fetch, fetches } = objects(randomBytes(10))
    const memory = new ObjectMemory(SLAB_BYTES, fetch)
    await expect(memory.get('../../etc/passwd', 10, 100)).rejects.toThrow(/not a CID/)
    await expect(memory.own('QmNotACidAtAll', 10, 100)).rejects.toThrow(/not a CID/)
    expect(fetches.size).toBe(0)
  })
})
