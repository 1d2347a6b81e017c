import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { openIndex, placeKey, type NewContentRecord } from '../../src/index/index.js'
import { useTempDir } from '../helpers/temp-dir.js'

const A = 'aaaaaaaa-0000-4000-8000-00000000c0de'
const B = 'bbbbbbbb-0000-4000-8000-00000000c0de'
const OLD = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'
const NEW = 'bafkreiaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'

function record (cid: string, at: number): NewContentRecord {
  return { cid, size: 26, sealing: 'aes-256-gcm/1', keyId: '0123456789abcdef', keySalt: '', objects: JSON.stringify([[OLD, at, 26]]) }
}

describe('content moves: a repack records where the bytes went', () => {
  it('finds only the device\'s own records where the plan found them, and moves those still there, each with its next sequence number', async () => {
    const index = openIndex(join(await useTempDir(), 'index.sqlite'))
    try {
      index.content.record(A, 'a', [record('one', 0), record('two', 26), record('three', 52)])
      index.content.record(B, 'b', [record('one', 0), record('four', 78)])
      const at = (offset: number): string => JSON.stringify([[OLD, offset, 26]])
      // B's record of 'four' is not A's; 'three' lies elsewhere; 'absent' has no record.
      // 'one' asked at two places: only the one its record names is answered.
      const placed = index.contentMoves.placed(A, [
        { cid: 'one', objects: at(0) }, { cid: 'one', objects: at(26) }, { cid: 'two', objects: at(26) }, { cid: 'three', objects: at(0) },
        { cid: 'four', objects: at(78) }, { cid: 'absent', objects: at(0) }
      ])
      expect([...placed].sort()).toEqual([placeKey({ cid: 'one', objects: at(0) }), placeKey({ cid: 'two', objects: at(26) })].sort())

      // Stored again after the plan: its record names another place now, and stays there.
      index.content.record(A, 'a', [{ ...record('two', 0), objects: JSON.stringify([['bafkreibbbb', 0, 26]]) }])
      const seq = index.segments.devices().find(d => d.deviceId === A)?.lastSeq ?? 0
      const to = JSON.stringify([[NEW, 0, 26]])
      const moves = [
        { cid: 'one', from: JSON.stringify([[OLD, 0, 26]]), to },
        // The same file twice: once moved, its record no longer names the second's place.
        { cid: 'one', from: JSON.stringify([[OLD, 0, 26]]), to: JSON.stringify([[NEW, 26, 26]]) },
        { cid: 'two', from: JSON.stringify([[OLD, 26, 26]]), to },
        { cid: 'absent', from: to, to }
      ]
      const moved = index.contentMoves.move(A, 'a', moves, 1_000)
      expect([...moved]).toEqual([moves[0]])
      expect(index.segments.devices().find(d => d.deviceId === A)?.lastSeq).toBe(seq + 1)
      const one = index.content.lookup('one')
      expect(one.find(r => r.deviceId === A)).toMatchObject({ objects: to, seq: seq + 1, storedAt: 1_000, size: 26 })
      // Another device's record of the same file is its own: untouched.
      expect(one.find(r => r.deviceId === B)?.objects).toBe(JSON.stringify([[OLD, 0, 26]]))
      expect(JSON.parse(index.content.lookup('two')[0]?.objects ?? '[]')[0][0]).toBe('bafkreibbbb')
      expect(index.contentMoves.move(A, 'a', [])).toEqual(new Set())
      // The connection's sync setting is as it was after a move.
      expect(index.db.pragma('synchronous', { simple: true })).toBe(1)
    } finally {
      index.close()
    }
  })
})
