import { describe, expect, it } from 'vitest'
import { DEVICE_A as A, indexDatabase as writeIndexDatabase } from './index-database.js'
import { join } from 'node:path'
import { ObjectSets, type BaseFile } from '../../../src/sync/prune/object-sets.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { seededRandom } from '../../helpers/seeded-random.js'

const B = 'bbbbbbbb-0000-4000-8000-000000000000'
type Row = [device: string, path: string, seq: number, cid: string | null, deleted: number]
type Record = [device: string, cid: string, objects: string, seq: number, key: string]

describe('a prune\'s sets, each device\'s only base settled from its file', () => {
  it('give what taking every base whole gives: two devices, deltas before and after the base, publishes kept anywhere, reused sequences', async () => {
    const dir = await useTempDir()
    const random = seededRandom(12345)
    let made = 0
    const objects = (): string => {
      const one = (): string => `o${random(6) === 0 ? random(made + 1) : ++made}`
      const r = random(10)
      if (r === 0) return JSON.stringify([[one(), 0, 5], [one(), 5, 5]])
      if (r === 1) return ['not json', '[]', '[["o-odd"]]', '[["o-x",1.5,2]]', "[['o-j5',0,1]]", '[["o-big",9223372036854775807,1]]'][random(6)] ?? ''
      return JSON.stringify([[one(), random(1000), 1 + random(50)]])
    }
    for (let round = 0; round < 60; round++) {
      let files = 0
      const database = (rows: Row[], records: Record[]): string => {
        const path = join(dir, `s-${round}-${files++}.sqlite`)
        writeIndexDatabase(path, rows.map(([device, p, seq, cid, deleted]) => [p, seq, cid, deleted, device]), records.map(([device, cid, objects, seq, key]) => [cid, objects, seq, device, key]))
        return path
      }
      const tos: Array<[string, number]> = []
      const bases: BaseFile[] = []
      const deltas: string[] = []
      for (const device of [A, B]) {
        if (device === B && random(3) === 0) continue
        let seq = 100 + random(3)
        let low = 1
        const paths = 5 + random(10)
        const rows: Row[] = Array.from({ length: paths }, (_, i) => [device, `p${i}`, ++seq, random(7) === 0 ? null : `file-${random(paths + 4)}`, random(6) === 0 ? 1 : 0])
        const records: Record[] = []
        for (let i = 0; i < paths + 4; i++) if (random(3) !== 0) records.push([device, `file-${i}`, objects(), ++seq, random(5) === 0 ? 'k2' : 'k1'])
        const baseTo = seq
        // Deltas of an older chain (below the base's sequences), deltas after the base, and deltas of
        // a device that reused the base's sequences for other versions of its rows and records.
        for (let d = 0; d < 1 + random(5); d++) {
          if (random(4) === 0) {
            const again = [...new Set(Array.from({ length: 1 + random(3) }, () => random(paths)))]
            const reused = [...new Set(Array.from({ length: 1 + random(3) }, () => random(records.length)))].map(i => records[i]).filter((r): r is Record => r !== undefined)
            deltas.push(database(
              again.flatMap((p): Row[] => rows[p] === undefined ? [] : [[device, `p${p}`, rows[p][2], random(3) === 0 ? null : `file-${random(paths + 6)}`, random(2)]]),
              reused.map((r): Record => [device, r[1], objects(), r[3], r[4]])))
            continue
          }
          const older = random(3) === 0
          let s = (low += random(5))
          const changed = [...new Set(Array.from({ length: 1 + random(5) }, () => random(paths + 3)))]
          const next = (): number => older ? s++ : ++seq
          deltas.push(database(
            changed.map((p): Row => [device, `p${p}`, next(), random(5) === 0 ? null : `file-${random(paths + 6)}`, random(4) === 0 ? 1 : 0]),
            changed.map((): Record => [device, `file-${random(paths + 6)}`, objects(), next(), random(5) === 0 ? 'k2' : 'k1'])))
          if (older) low = s
          if (random(2) === 0) tos.push([device, older ? s - 1 : seq])
        }
        bases.push({ path: database(rows, records), device, to: baseTo })
        tos.push([device, random(4) === 0 ? 1 + random(baseTo) : baseTo], [device, seq])
        if (random(3) === 0) tos.push([device, random(seq + 2)])
        if (random(3) === 0) tos.push([device, random(low + 1)])
      }
      const settled = (whole: boolean): unknown => {
        const sets = new ObjectSets(join(dir, `sets-${round}-${String(whole)}.sqlite`))
        try {
          if (whole) for (const base of bases) sets.take(base.path, false)
          for (const delta of deltas) sets.take(delta, false)
          for (const [device, to] of tos) sets.keptAt(device, to)
          sets.settle(whole ? [] : bases)
          const all = Array.from({ length: made + 1 }, (_, i) => `o${i}`).concat('o-odd', 'o-x', 'o-j5', 'o-big')
          all.forEach((o, i) => { sets.listed(o, 1000 + i, 0) })
          return { dead: sets.dead(1), packs: [sets.livePacks(A), sets.livePacks(B)], blobs: all.map(o => sets.liveBlobs(o)) }
        } finally {
          sets.close()
        }
      }
      expect(settled(false), `round ${round}`).toEqual(settled(true))
    }
  })

  it('give what taking every base whole gives: a device\'s older base that shares most rows and records with its newer one', async () => {
    const dir = await useTempDir()
    const random = seededRandom(777)
    for (let round = 0; round < 60; round++) {
      let files = 0
      const database = (rows: Row[], records: Record[]): string => {
        const path = join(dir, `t-${round}-${files++}.sqlite`)
        writeIndexDatabase(path, rows.map(([device, p, seq, cid, deleted]) => [p, seq, cid, deleted, device]), records.map(([device, cid, objects, seq, key]) => [cid, objects, seq, device, key]))
        return path
      }
      let seq = 10
      let object = 0
      const paths = 6 + random(10)
      // The older base; the newer one the same but for some rows and records, changed since. (A
      // reused sequence between two bases is weighed per base: the older base's version stays live.)
      const oldRows: Row[] = Array.from({ length: paths }, (_, i) => [A, `p${i}`, ++seq, `file-${random(paths + 3)}`, random(8) === 0 ? 1 : 0])
      const oldRecords: Record[] = Array.from({ length: paths + 3 }, (_, i): Record => [A, `file-${i}`, JSON.stringify([[`o${++object}`, 0, 5]]), ++seq, 'k1'])
      const olderTo = seq
      const deltas: string[] = []
      const newRows = oldRows.map((r): Row => [...r])
      const newRecords = oldRecords.map((r): Record => [...r])
      const tos: Array<[string, number]> = [[A, olderTo]]
      for (let d = 0; d < 1 + random(4); d++) {
        const changed = [...new Set(Array.from({ length: 1 + random(3) }, () => random(paths)))]
        const rows = changed.map((p): Row => [A, `p${p}`, ++seq, random(6) === 0 ? null : `file-${random(paths + 3)}`, random(5) === 0 ? 1 : 0])
        const records = changed.map((p): Record => [A, `file-${p}`, JSON.stringify([[`o${++object}`, 0, 5]]), ++seq, 'k1'])
        // A delta the kept chains name (a publish between the bases), or a change only the newer base holds.
        if (random(2) === 0) {
          deltas.push(database(rows, records))
          if (random(2) === 0) tos.push([A, seq])
        }
        for (const r of rows) newRows[Number(r[1].slice(1))] = r
        for (const r of records) newRecords[Number(r[1].slice(5))] = r
      }
      const newerTo = ++seq
      tos.push([A, newerTo])
      if (random(2) === 0) tos.push([A, 1 + random(newerTo)])
      const bases: BaseFile[] = [{ path: database(oldRows, oldRecords), device: A, to: olderTo }, { path: database(newRows, newRecords), device: A, to: newerTo }]
      const settled = (whole: boolean): unknown => {
        const sets = new ObjectSets(join(dir, `sets-t-${round}-${String(whole)}.sqlite`))
        try {
          // Whole: the newest base first, as readNames took them before (a tie of sequence: the first read wins).
          if (whole) for (const base of [...bases].reverse()) sets.take(base.path, false)
          for (const delta of deltas) sets.take(delta, false)
          for (const [device, to] of tos) sets.keptAt(device, to)
          sets.settle(whole ? [] : bases)
          const all = Array.from({ length: object + 1 }, (_, i) => `o${i}`)
          all.forEach((o, i) => { sets.listed(o, 1000 + i, 0) })
          return { dead: sets.dead(1), packs: sets.livePacks(A), blobs: all.map(o => sets.liveBlobs(o)) }
        } finally {
          sets.close()
        }
      }
      expect(settled(false), `round ${round}`).toEqual(settled(true))
    }
  })
})
