import { describe, expect, it } from 'vitest'
import { join } from 'node:path'
import { DEVICE_A as A, indexDatabase, type EntryRow, type RecordRow } from './index-database.js'
import { ObjectSets, type BaseFile } from '../../../src/sync/prune/object-sets.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { seededRandom } from '../../helpers/seeded-random.js'

const B = 'bbbbbbbb-0000-4000-8000-000000000000'

/**
 * Attack: several bases per device, chosen as a forget re-bases (any earlier publish may start a
 * chain), records collected out of later bases, keys rotated, malformed objects, two devices, and
 * the 8-newest cut of readNames. The ground truth is computed here from the histories alone: for
 * each kept publish, the files live in its device's state then; for each such file, the newest
 * version (by sequence) that names an object of every (file, device, key) any read segment holds.
 * A prune must never list one of those objects as dead.
 */
describe('a prune\'s sets against a ground truth computed from the histories', () => {
  it('never lists as dead an object the newest version of a live file\'s record names', async () => {
    const dir = await useTempDir()
    const random = seededRandom(977)
    let made = 0
    const objects = (): string => {
      const one = (): string => `o${random(6) === 0 ? random(made + 1) : ++made}`
      const r = random(8)
      if (r === 0) return JSON.stringify([[one(), 0, 5], [one(), 5, 5]])
      if (r === 1) return ['not json', '[]', '[[5,0,1]]', '{"a":1}', "[['oj5',0,1]]"][random(5)] ?? ''
      return JSON.stringify([[one(), random(1000), 1 + random(50)]])
    }
    const namesObjects = (text: string): string[] => {
      try {
        const parsed = JSON.parse(text) as unknown
        if (!Array.isArray(parsed)) return []
        return parsed.flatMap(p => Array.isArray(p) && typeof p[0] === 'string' ? [p[0] as string] : [])
      } catch {
        return []
      }
    }
    let files = 0
    const database = (name: string, rows: readonly EntryRow[], records: readonly RecordRow[]): string => {
      const path = join(dir, `${name}-${files++}.sqlite`)
      indexDatabase(path, rows, records)
      return path
    }
    const failures: string[] = []
    for (let round = 0; round < 80; round++) {
      const allBases: BaseFile[] = []
      const deltas: string[] = []
      const tos: Array<[string, number]> = []
      // Every record version any segment read holds: [file, device, key, seq, objects].
      const versions: Array<[string, string, string, number, string]> = []
      const liveFiles = new Set<string>()
      for (const device of [A, B]) {
        if (device === B && random(2) === 0) continue
        const paths = 4 + random(8)
        type Row = EntryRow
        type Rec = RecordRow
        const rows = new Map<string, Row>()
        const records = new Map<string, Rec>()
        const states: Array<{ seq: number, rows: Map<string, Row>, records: Map<string, Rec>, changedRows: Row[], changedRecords: Rec[] }> = []
        let seq = 0
        const publishes = 4 + random(10)
        for (let p = 0; p < publishes; p++) {
          const changedRows: Row[] = []
          const changedRecords: Rec[] = []
          for (let c = 0; c < 1 + random(6); c++) {
            seq++
            if (random(2) === 0) {
              const deleted = random(6) === 0 ? 1 : 0
              const row: Row = [`p${random(paths)}`, seq, deleted === 1 ? null : `file-${random(paths + 4)}`, deleted, device]
              rows.set(row[0], row)
              changedRows.push(row)
            } else {
              // A key rotation replaces the record (one per file and device), as content's key does.
              const rec: Rec = [`file-${random(paths + 4)}`, objects(), seq, device, random(4) === 0 ? 'k2' : 'k1']
              records.set(rec[0], rec)
              changedRecords.push(rec)
            }
          }
          states.push({ seq, rows: new Map(rows), records: new Map(records), changedRows, changedRecords })
        }
        // Kept publishes; each stands on a base at any earlier publish (a forget re-bases anywhere).
        const kept = states.map((_, i) => i).filter(i => i === states.length - 1 || random(3) === 0)
        const baseAt = new Set<number>()
        const deltaAt = new Set<number>()
        for (const i of kept) {
          // Often a chain is its base alone: most records are then read from bases only.
          const b = random(2) === 0 ? i : random(i + 1)
          baseAt.add(b)
          for (let j = b + 1; j <= i; j++) deltaAt.add(j)
          tos.push([device, (states[i] as typeof states[number]).seq])
          for (const row of (states[i] as typeof states[number]).rows.values()) if (row[2] !== null && row[3] === 0) liveFiles.add(row[2])
        }
        for (const b of baseAt) {
          const state = states[b] as typeof states[number]
          // Some bases leave out records of files no row names any more (collected).
          const named = new Set([...state.rows.values()].map(r => r[2]))
          const recs = [...state.records.values()].filter(r => random(2) === 0 || named.has(r[0]))
          for (const r of recs) versions.push([r[0], device, r[4] ?? 'k1', r[2] ?? 1, r[1]])
          allBases.push({ path: database('base', [...state.rows.values()], recs), device, to: state.seq })
        }
        for (const d of deltaAt) {
          const state = states[d] as typeof states[number]
          const prev = states[d - 1] as typeof states[number]
          // A delta holds each row and record changed since the publish before, as it stands at the end.
          const rowsChanged = [...state.rows.values()].filter(r => r[1] > prev.seq)
          const recsChanged = [...state.records.values()].filter(r => (r[2] ?? 1) > prev.seq)
          for (const r of recsChanged) versions.push([r[0], device, r[4] ?? 'k1', r[2] ?? 1, r[1]])
          deltas.push(database('delta', rowsChanged, recsChanged))
        }
      }
      // As readNames: the 8 newest bases (by their last sequence) settled from their files, the rest taken.
      const sorted = [...allBases].sort((a, b) => b.to - a.to)
      const settledBases = sorted.slice(0, 8)
      const takenBases = sorted.slice(8)
      // Ground truth.
      const newest = new Map<string, { seq: number, objects: string[] }>()
      for (const [file, device, key, s, text] of versions) {
        const objs = namesObjects(text)
        if (objs.length === 0) continue
        const k = `${file} ${device} ${key}`
        const known = newest.get(k)
        if (known === undefined || s > known.seq) newest.set(k, { seq: s, objects: objs })
      }
      const needed = new Set<string>()
      for (const [k, { objects: objs }] of newest) if (liveFiles.has(k.split(' ')[0] as string)) for (const o of objs) needed.add(o)
      const sets = new ObjectSets(join(dir, `sets-${round}.sqlite`))
      try {
        for (const base of takenBases) sets.take(base.path, false)
        for (const delta of deltas) sets.take(delta, false)
        for (const [device, to] of tos) sets.keptAt(device, to)
        sets.settle(settledBases)
        const all = [...Array.from({ length: made + 1 }, (_, i) => `o${i}`)]
        all.forEach((o, i) => { sets.listed(o, 1000 + i, 0) })
        const dead = sets.dead(1).map(d => d.cid)
        const lost = dead.filter(o => needed.has(o))
        if (lost.length > 0) failures.push(`round ${round}: ${lost.join(', ')} dead but needed`)
      } finally {
        sets.close()
      }
    }
    expect(failures).toEqual([])
  })
})

describe('a prune\'s sets, a tie of sequence between two bases of a device', () => {
  it('is broken for records as for rows: the newer base wins, as taking the newest publish\'s base first did', async () => {
    const dir = await useTempDir()
    const older = join(dir, 'older.sqlite')
    const newer = join(dir, 'newer.sqlite')
    const delta = join(dir, 'delta.sqlite')
    // A device that reused sequences 5 and 8: p and file-Y's record differ between its two bases.
    indexDatabase(older, [['p', 5, 'file-X', 0], ['q', 6, 'file-Y', 0]], [['file-Y', '[["oY",0,10]]', 8]])
    indexDatabase(newer, [['p', 5, 'file-Z', 0], ['q', 6, 'file-Y', 0]], [['file-Y', '[["oY",0,20]]', 8]])
    // An old delta holds p and file-Y too, so both bases' versions are weighed with it.
    indexDatabase(delta, [['p', 2, 'file-W', 0]], [['file-Y', '[["oW",0,5]]', 3]])
    const run = (whole: boolean): unknown => {
      const sets = new ObjectSets(join(dir, `sets-${String(whole)}.sqlite`))
      try {
        // Whole: as readNames took them before, the newest publish's base first (ties: first read wins).
        if (whole) { sets.take(newer, false); sets.take(older, false) }
        sets.take(delta, false)
        sets.keptAt(A, 20)
        sets.settle(whole ? [] : [{ path: older, device: A, to: 10 }, { path: newer, device: A, to: 20 }])
        for (const o of ['oY', 'oW']) sets.listed(o, 100, 0)
        return { blobs: sets.liveBlobs('oY'), packs: sets.livePacks(A).map(p => [p.cid, p.liveBytes]) }
      } finally {
        sets.close()
      }
    }
    expect(run(false)).toEqual(run(true))
  })
})
