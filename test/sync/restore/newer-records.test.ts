import { describe, expect, it, onTestFinished } from 'vitest'
import { join } from 'node:path'
import { openIndex, type Entry, type Index } from '../../../src/index/index.js'
import { parseContentRecord, type ContentRecord } from '../../../src/custody/index.js'
import { recordsFrom, tryNewerRecords } from '../../../src/sync/restore/newer-records.js'
import type { GetOutcome } from '../../../src/sync/restore/get-outcome.js'
import type { RecordLookup } from '../../../src/sync/restore/targets.js'
import { useTempDir } from '../../helpers/temp-dir.js'

const A = 'aaaaaaaa-0000-4000-8000-000000000000'
const B = 'bbbbbbbb-0000-4000-8000-000000000000'
const X = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'
const Y = 'bafkreiez75brr3hv35szfm2kcnr2f3tbmsera6emmlf7zih6vdvwv2kbam'
const Z = 'bafkreibot53fa6bbeksi6jth6qaiue5qcpp77opaas5zwzvdb4eiwldaem'
const FILE = 'bafkreif5kzzv5x3wlfwnm47yqcwnqte67zy6nrypepyoexs34j577ji4ta'

function stored (index: Index, device: string, object: string, at: number): void {
  index.content.record(device, device.slice(0, 1), [{ cid: FILE, size: 26, sealing: 'aes-256-gcm/1', keyId: '0123456789abcdef', keySalt: '', objects: JSON.stringify([[object, 0, 26 + 16]]) }], at)
}

async function indexAt (dir: string, name: string): Promise<Index> {
  const index = openIndex(join(dir, `${name}.sqlite`))
  onTestFinished(() => { index.close() })
  return index
}

describe('records of the same content from several indexes', () => {
  it('merge newest first, each record once, the first index\'s first on a tie', async () => {
    const dir = await useTempDir()
    const past = await indexAt(dir, 'past')
    const local = await indexAt(dir, 'local')
    stored(past, A, X, 1_000)
    stored(past, B, Z, 3_000)
    stored(local, B, Z, 3_000)
    stored(local, A, Y, 2_000)
    const merged = recordsFrom([past, local])([FILE, 'nothing'])
    expect(merged.get(FILE)?.map(r => [r.deviceId, JSON.parse(r.objects)[0][0], r.storedAt])).toEqual([[B, Z, 3_000], [A, Y, 2_000], [A, X, 1_000]])
    expect(merged.has('nothing')).toBe(false)
  })

  it('a file whose objects were not found is fetched again once a fallback, with a record naming other objects; none left keeps its failure', async () => {
    const dir = await useTempDir()
    const index = await indexAt(dir, 'index')
    stored(index, B, Z, 3_000)
    stored(index, A, X, 1_000)
    const head = await indexAt(dir, 'head')
    stored(head, A, Y, 2_000)
    const row = { cid: FILE, folder: 'f', path: 'p' } as unknown as Entry
    const rows: Entry[] = [row]
    const gone: GetOutcome = { path: 'f/p', outcome: 'failed', code: 'ERR_CONTENT_NOT_FOUND', reason: 'no gateway has it' }
    const outcomes: Array<GetOutcome | undefined> = [gone]
    const recordOf = (object: string): ContentRecord => parseContentRecord({ cid: FILE, size: 26, sealing: 'aes-256-gcm/1', keyId: '0123456789abcdef', keySalt: '', objects: [[object, 0, 42]] })
    const records = new Map([[0, recordOf(Z)]])
    const asked: string[][] = []
    const lookups = (look: RecordLookup): string[] => (look([FILE]).get(FILE) ?? []).map(r => JSON.parse(r.objects)[0][0] as string)
    // Z, the newest, is gone; so is X, the next; the head's Y is there.
    const present = new Set([Y])
    await tryNewerRecords({
      fallbacks: [async (cids) => index.content.lookupMany(cids), async (cids) => head.content.lookupMany(cids), async (cids) => index.content.lookupMany(cids)],
      rows,
      outcomes,
      records,
      retry: async (ats, lookup) => {
        const objects = lookups(lookup)
        asked.push(objects)
        for (const at of ats) {
          outcomes[at] = undefined
          rows.push(rows[at] as Entry)
          records.set(rows.length - 1, recordOf(objects[0] as string))
          outcomes.push(present.has(objects[0] as string) ? { path: 'f/p', outcome: 'written' } : gone)
        }
      }
    })
    // Once with X (what is left of the same records), once with the head's Y; the third finds it done.
    expect(asked).toEqual([[X], [Y]])
    expect(outcomes.filter(o => o !== undefined)).toEqual([{ path: 'f/p', outcome: 'written' }])

    // A fallback with only the objects already tried: no retry, and the failure stays.
    const alone: Array<GetOutcome | undefined> = [gone]
    let retried = 0
    await tryNewerRecords({ fallbacks: [async (cids) => head.content.lookupMany(cids)], rows: [row], outcomes: alone, records: new Map([[0, recordOf(Y)]]), retry: async () => { retried++ } })
    expect({ retried, alone }).toEqual({ retried: 0, alone: [gone] })
  })
})
