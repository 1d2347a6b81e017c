import { describe, expect, it } from 'vitest'
import { join } from 'node:path'
import { DEVICE_A as A, indexDatabase, type EntryRow, type RecordRow } from './index-database.js'
import { ObjectSets, type BaseFile } from '../../../src/sync/prune/object-sets.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { seededRandom } from '../../helpers/seeded-random.js'

const B = 'bbbbbbbb-0000-4000-8000-000000000000'

/** One change of a device's history: a path's new version, or a record's, at its own sequence. */
type Change = { readonly seq: number, readonly row?: EntryRow, readonly record?: RecordRow }

describe('a prune\'s sets, several bases of a device settled from their files', () => {
  it('give what taking every segment whole gives, over histories cut into chains as publishes make them', async () => {
    const dir = await useTempDir()
    const random = seededRandom(4242)
    let made = 0
    const objects = (): string => {
      const one = (): string => `o${random(8) === 0 ? random(made + 1) : ++made}`
      if (random(8) === 0) return JSON.stringify([[one(), 0, 5], [one(), 5, 5]])
      if (random(15) === 0) return ['not json', '[]'][random(2)] ?? ''
      return JSON.stringify([[one(), random(1000), 1 + random(50)]])
    }
    let files = 0
    const database = (name: string, rows: readonly EntryRow[], records: readonly RecordRow[]): string => {
      const path = join(dir, `${name}-${files++}.sqlite`)
      indexDatabase(path, rows, records)
      return path
    }
    for (let round = 0; round < 40; round++) {
      const bases: BaseFile[] = []
      const deltas: string[] = []
      const tos: Array<[string, number]> = []
      for (const device of [A, B]) {
        if (device === B && random(2) === 0) continue
        // A history: each change a path's version or a file's record, at its own sequence.
        const paths = 6 + random(10)
        const history: Change[] = []
        for (let seq = 1; seq <= 40 + random(60); seq++) {
          const deleted = random(6) === 0 ? 1 : 0
          history.push(random(2) === 0
            ? { seq, row: [`p${random(paths)}`, seq, deleted === 1 || random(8) === 0 ? null : `file-${random(paths + 4)}`, deleted, device] }
            : { seq, record: [`file-${random(paths + 4)}`, objects(), seq, device, random(5) === 0 ? 'k2' : 'k1'] })
        }
        const last = history.length
        // Cut into deltas at publishes; some cuts start a new chain on a base of the whole state there.
        const cuts = [...new Set(Array.from({ length: 3 + random(6) }, () => 1 + random(last)))].sort((a, b) => a - b)
        if (cuts[cuts.length - 1] !== last) cuts.push(last)
        const rebases = new Set([cuts[0] as number, ...cuts.filter(() => random(3) === 0)])
        const stateAt = (to: number, from = 0): { rows: EntryRow[], records: RecordRow[] } => {
          const rows = new Map<string, EntryRow>()
          const records = new Map<string, RecordRow>()
          for (const change of history.slice(from, to)) {
            if (change.row !== undefined) rows.set(change.row[0], change.row)
            if (change.record !== undefined) records.set(change.record[0], change.record)
          }
          return { rows: [...rows.values()], records: [...records.values()] }
        }
        // Each publish's chain: the base it stands on, then the deltas up to it.
        const chains: Array<{ to: number, base: number, deltas: number[] }> = []
        let base = cuts[0] as number
        for (let i = 0; i < cuts.length; i++) {
          const cut = cuts[i] as number
          if (rebases.has(cut)) base = cut
          chains.push({ to: cut, base, deltas: cuts.slice(0, i + 1).filter(c => c > base) })
        }
        // Kept publishes: the last, and some others; only their segments are read.
        const kept = chains.filter((c, i) => i === chains.length - 1 || random(3) === 0)
        const read = { bases: new Set(kept.map(c => c.base)), deltas: new Set(kept.flatMap(c => c.deltas)) }
        for (const to of read.bases) {
          const { rows, records } = stateAt(to)
          bases.push({ path: database('base', rows, records), device, to })
        }
        for (const to of read.deltas) {
          const from = cuts[cuts.indexOf(to) - 1] ?? 0
          const { rows, records } = stateAt(to, from)
          deltas.push(database('delta', rows, records))
        }
        for (const c of kept) tos.push([device, c.to])
      }
      const settled = (whole: boolean): unknown => {
        const sets = new ObjectSets(join(dir, `sets-${round}-${String(whole)}.sqlite`))
        try {
          if (whole) for (const base of bases) sets.take(base.path, false)
          for (const delta of deltas) sets.take(delta, false)
          for (const [device, to] of tos) sets.keptAt(device, to)
          sets.settle(whole ? [] : bases)
          const all = Array.from({ length: made + 1 }, (_, i) => `o${i}`)
          all.forEach((o, i) => { sets.listed(o, 1000 + i, 0) })
          return { dead: sets.dead(1), packs: [sets.livePacks(A), sets.livePacks(B)], blobs: all.map(o => sets.liveBlobs(o)) }
        } finally {
          sets.close()
        }
      }
      expect(settled(false), `round ${round}`).toEqual(settled(true))
    }
  })
})
