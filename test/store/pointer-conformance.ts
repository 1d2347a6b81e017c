import { describe, expect, it } from 'vitest'
import { CidsyncError, PointerNotFoundError } from '../../src/errors.js'
import type { PointerRegistry, StoredPointer } from '../../src/store/index.js'

const CIDS = [
  'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy',
  'bafkreiaxnnnb7qz2focittuqq3ya25q7rcv3bqynnczfzako47346wosmu',
  'bafkreidgvpkjawlxz6sffxzwgooowe5yt7i6wsyg236mfoks77nywkptdq'
] as const
const ENGINE = 'cidsync-sqlite/2'

/** A pointer for `namespace` on `network`, naming the `n`th CID. */
const pointer = (n: number, namespace = 'default', network = 'mainnet'): StoredPointer =>
  ({ snapshotCid: CIDS[n] as string, engine: ENGINE, namespace, network })

/** A registry under test, made fresh (an empty home) for each test. */
export interface PointersUnderTest {
  readonly pointers: PointerRegistry
}

/**
 * The guarantees written on `PointerRegistry`, run against one implementation. Every backend's
 * pointers run this same suite: a new backend is done when it passes.
 */
export function pointerRegistryConformance (name: string, make: () => Promise<PointersUnderTest>): void {
  describe(`${name}: the PointerRegistry guarantees`, () => {
    it('nothing set: current is PointerNotFoundError, never another error or an empty pointer', async () => {
      const { pointers } = await make()
      const read = pointers.current('default', 'mainnet')
      await expect(read).rejects.toBeInstanceOf(PointerNotFoundError)
      await expect(read).rejects.toMatchObject({ code: 'ERR_POINTER_NOT_FOUND' })
    })

    it('read-after-write: once put answers, current gives what it set; a second put overwrites', async () => {
      const { pointers } = await make()
      await pointers.put(pointer(0))
      expect(await pointers.current('default', 'mainnet')).toMatchObject(pointer(0))
      await pointers.put({ ...pointer(1), memories: 3 })
      expect(await pointers.current('default', 'mainnet')).toMatchObject({ ...pointer(1), memories: 3 })
    })

    it('apart: each namespace and network is its own pointer', async () => {
      const { pointers } = await make()
      await pointers.put(pointer(0, 'default', 'mainnet'))
      await pointers.put(pointer(1, 'work', 'mainnet'))
      await pointers.put(pointer(2, 'default', 'calibration'))
      expect(await pointers.current('default', 'mainnet')).toMatchObject(pointer(0))
      expect(await pointers.current('work', 'mainnet')).toMatchObject(pointer(1, 'work'))
      expect(await pointers.current('default', 'calibration')).toMatchObject(pointer(2, 'default', 'calibration'))
      await expect(pointers.current('work', 'calibration')).rejects.toBeInstanceOf(PointerNotFoundError)
    })

    it('checked: a snapshot CID that is not a CID is refused, and the pointer stays as it was', async () => {
      const { pointers } = await make()
      await expect(pointers.put({ ...pointer(0), snapshotCid: 'not a cid' })).rejects.toBeInstanceOf(CidsyncError)
      await expect(pointers.current('default', 'mainnet')).rejects.toBeInstanceOf(PointerNotFoundError)
      await pointers.put(pointer(0))
      await expect(pointers.put({ ...pointer(1), snapshotCid: 'bafy/../x' })).rejects.toBeInstanceOf(CidsyncError)
      expect(await pointers.current('default', 'mainnet')).toMatchObject(pointer(0))
    })

    it('concurrent puts: to one pointer, one wins whole; to different pointers, all land', async () => {
      const { pointers } = await make()
      await Promise.all([0, 1, 2].map(async n => { await pointers.put(pointer(n)) }))
      const won = await pointers.current('default', 'mainnet')
      const put = [0, 1, 2].map(n => pointer(n))
      expect(put.some(p => p.snapshotCid === won.snapshotCid && p.engine === won.engine)).toBe(true)
      const namespaces = Array.from({ length: 8 }, (_, i) => `ns-${i}`)
      await Promise.all(namespaces.map(async (ns, i) => { await pointers.put(pointer(i % 3, ns)) }))
      for (const [i, ns] of namespaces.entries()) expect(await pointers.current(ns, 'mainnet'), ns).toMatchObject(pointer(i % 3, ns))
    })

    it('an aborted signal ends a put and a read at once; a put aborted before it starts writes nothing', async () => {
      const { pointers } = await make()
      const aborted = AbortSignal.abort()
      await expect(pointers.put(pointer(0), { signal: aborted })).rejects.toThrow()
      // An abort is not "nothing set": a caller must not take it for an empty home.
      const read = pointers.current('default', 'mainnet', { signal: aborted })
      await expect(read).rejects.toThrow()
      await expect(read).rejects.not.toBeInstanceOf(PointerNotFoundError)
      await expect(pointers.current('default', 'mainnet')).rejects.toBeInstanceOf(PointerNotFoundError)
    })
  })
}
