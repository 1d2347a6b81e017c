import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { CidBuilder, cidProfile } from '../../src/content/index.js'
import { ObjectMemory, SLAB_BYTES, type FetchObjectBytes } from '../../src/custody/index.js'

const profile = cidProfile('kubo-cidv1')

/** Objects by CID; `fail` names those whose fetch fails; `gate` holds a fetch until released. */
function objects (...contents: Buffer[]): { cids: string[], fetches: Map<string, number>, fetch: FetchObjectBytes, fail: Set<string>, gates: Map<string, Promise<void>> } {
  const byCid = new Map(contents.map(c => [new CidBuilder(profile).update(c).finish().toString(), c]))
  const fetches = new Map<string, number>()
  const fail = new Set<string>()
  const gates = new Map<string, Promise<void>>()
  const fetch: FetchObjectBytes = async (cid, { slab, signal }) => {
    fetches.set(cid, (fetches.get(cid) ?? 0) + 1)
    await gates.get(cid)
    signal?.throwIfAborted()
    if (fail.has(cid)) throw new Error(`no ${cid}`)
    const bytes = byCid.get(cid) as Buffer
    const out: Uint8Array[] = []
    for (let at = 0; at < bytes.byteLength; at += SLAB_BYTES) {
      const into = slab()
      const piece = bytes.subarray(at, at + SLAB_BYTES)
      into.set(piece)
      out.push(into.subarray(0, piece.byteLength))
    }
    return out
  }
  return { cids: [...byCid.keys()], fetches, fetch, fail, gates }
}

const turns = async (until: () => boolean): Promise<void> => {
  for (let turn = 0; turn < 1000 && !until(); turn++) await new Promise(resolve => setImmediate(resolve))
}

describe('objects fetched ahead of their readers', () => {
  it('a failed fetch ahead fails its readers, gives its memory back, and the next object is still fetched by its reader', async () => {
    const [a, b, c] = [randomBytes(1000), randomBytes(SLAB_BYTES + 5), randomBytes(3000)]
    const { cids, fetches, fetch, fail } = objects(a, b, c)
    const [ca, cb, cc] = cids as [string, string, string]
    fail.add(cb)
    const memory = new ObjectMemory(4 * SLAB_BYTES, fetch)
    memory.expect(ca, 1, a.byteLength)
    memory.expect(cb, 2, b.byteLength)
    memory.expect(cc, 1, c.byteLength)
    await memory.get(ca, a.byteLength, 8 * SLAB_BYTES)
    await turns(() => fetches.get(cb) !== undefined)
    memory.release(ca)
    await expect(memory.get(cb, b.byteLength, 8 * SLAB_BYTES)).rejects.toThrow(/no /)
    await expect(memory.get(cb, b.byteLength, 8 * SLAB_BYTES)).rejects.toThrow(/no /)
    memory.release(cb)
    memory.release(cb)
    expect(memory.held).toBe(0)
    const last = await memory.get(cc, c.byteLength, 8 * SLAB_BYTES)
    expect(last.byteLength).toBe(c.byteLength)
    memory.release(cc)
    expect(memory.held).toBe(0)
  })

  it('never wedges, and fetches nothing, when every reader of an object fetched ahead lets it go while it waits for room', async () => {
    // Each object fills the budget: b, fetched ahead, waits for a to be let go.
    const [a, b, c] = [randomBytes(2 * SLAB_BYTES), randomBytes(2 * SLAB_BYTES - 7), randomBytes(2 * SLAB_BYTES - 9)]
    const { cids, fetches, fetch } = objects(a, b, c)
    const [ca, cb, cc] = cids as [string, string, string]
    const memory = new ObjectMemory(2 * SLAB_BYTES, fetch)
    memory.expect(ca, 1, a.byteLength)
    memory.expect(cb, 3, b.byteLength)
    memory.expect(cc, 1, c.byteLength)
    await memory.get(ca, a.byteLength, 8 * SLAB_BYTES)
    await turns(() => false)
    expect(fetches.get(cb)).toBeUndefined()
    // b's readers all fail before reading it; then a is let go.
    memory.release(cb)
    memory.release(cb)
    memory.release(cb)
    memory.release(ca)
    await turns(() => memory.held === 0)
    expect(memory.held).toBe(0)
    // Let go by every reader before it had room: never fetched.
    expect(fetches.get(cb)).toBeUndefined()
    const got = await Promise.race([memory.get(cc, c.byteLength, 8 * SLAB_BYTES), new Promise<undefined>(resolve => setTimeout(resolve, 5000, undefined))])
    expect(got?.byteLength).toBe(c.byteLength)
    memory.release(cc)
    expect(memory.held).toBe(0)
  })

  it('an abort while a fetch ahead waits for room: no fetch starts after it, no rejection is left unheard, memory goes back', async () => {
    const [a, b] = [randomBytes(2 * SLAB_BYTES), randomBytes(2 * SLAB_BYTES - 7)]
    const { cids, fetches, fetch } = objects(a, b)
    const [ca, cb] = cids as [string, string]
    const memory = new ObjectMemory(2 * SLAB_BYTES, fetch)
    memory.expect(ca, 1, a.byteLength)
    memory.expect(cb, 1, b.byteLength)
    const abort = new AbortController()
    const unheard: unknown[] = []
    const onUnhandled = (err: unknown): void => { unheard.push(err) }
    process.on('unhandledRejection', onUnhandled)
    try {
      await memory.get(ca, a.byteLength, 8 * SLAB_BYTES, abort.signal)
      await turns(() => false)
      abort.abort(new Error('interrupted'))
      memory.release(ca)
      await expect(memory.get(cb, b.byteLength, 8 * SLAB_BYTES, abort.signal)).rejects.toThrow('interrupted')
      memory.release(cb)
      await turns(() => false)
      expect(fetches.get(cb)).toBeUndefined()
      expect(memory.held).toBe(0)
      expect(unheard).toEqual([])
    } finally {
      process.off('unhandledRejection', onUnhandled)
    }
  })
})
