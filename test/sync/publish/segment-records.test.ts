import { describe, it, expect } from 'vitest'
import { randomBytes } from 'node:crypto'
import type { NewContentRecord } from '../../../src/index/index.js'
import { serviceUnderTest } from '../../helpers/service.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { syncDevice, writeRows as write } from '../../helpers/sync-device.js'
import { everything, manifestOf, pub, readIndex, restoreInto, restorer } from '../v2-helpers.js'

const A = 'aaaaaaaa-0000-4000-8000-000000000000'
const NS = 'segment-records'
const INCREMENTAL = 'deal = false\ncompact_after_deltas = 100\ncompact_fraction = 100\n'
const hex = (n: number): string => randomBytes(n).toString('hex')

describe('a delta of a repack\'s moves: a row and thousands of content records', () => {
  it('is published, and another device restores every row and record from it', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: NS, snapshot: INCREMENTAL })
    write(a, 'one.md', 'two.md')
    await pub(a, clients)
    // As a repack records each file it moved: a new record each, no row changed.
    const moved: NewContentRecord[] = Array.from({ length: 20_000 }, () => ({
      cid: `bafkrei${hex(26)}`, size: 4096, sealing: 'aes-256-gcm/1', keyId: hex(8), keySalt: '', objects: JSON.stringify([[`bafybei${hex(26)}`, 4096, 4124]])
    }))
    a.index.content.record(A, 'a', moved)
    write(a, 'three.md')
    const second = await pub(a, clients)
    const segments = (await manifestOf(clients, a, second.cid)).devices.find(d => d.deviceId === A)?.segments ?? []
    expect(segments.map(s => [s.kind, s.entries])).toEqual([['base', 2], ['delta', 1]])

    const r = await restorer(root, 'r', a, NS)
    const { rows } = await restoreInto(clients, r, NS)
    expect(rows).toEqual(everything(a.index))
    expect(readIndex(r.config, index => index.content.recordCount(A))).toBe(20_000)
  })
})
