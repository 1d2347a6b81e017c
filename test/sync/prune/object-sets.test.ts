import { describe, expect, it } from 'vitest'
import Database from 'better-sqlite3'
import { DEVICE_A as A, indexDatabase } from './index-database.js'
import { join } from 'node:path'
import { ObjectSets } from '../../../src/sync/prune/object-sets.js'
import { objectCidsOf } from '../../../src/custody/index.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { seededRandom } from '../../helpers/seeded-random.js'

/** Every candidate noted as listed, old enough to go: what `dead` answers is what the marks left. */
function deadOf (sets: ObjectSets, objects: readonly string[]): string[] {
  for (const o of objects) sets.listed(o, 1, 0)
  return sets.dead(1).map(d => d.cid).sort()
}

describe('a prune\'s working sets, filled from index databases', () => {
  it('keeps the objects of the files a kept publish holds, across a base and a delta, whatever the records say', async () => {
    const dir = await useTempDir()
    const N = 20_000
    const base = join(dir, 'base.sqlite')
    const delta = join(dir, 'delta.sqlite')
    const part = (o: string): [string, number, number] => [o, 0, 10]
    indexDatabase(base, Array.from({ length: N }, (_, i) => [`f${i}.md`, i + 1, `file-${i}`, 0]), [
      ...Array.from({ length: N }, (_, i): [string, string] => [`file-${i}`, JSON.stringify([part(`object-${i}`), part(`object-${i + 1}`)])]),
      // Records a damaged or hostile segment could hold: none of them names anything to keep or delete but a CID.
      ['file-bad', 'not json'],
      ['file-map', '{"object-map": 1}'],
      ['file-odd', JSON.stringify([[5, 0, 1], 'object-flat', part('object-odd')])]
    ])
    // The delta deletes f0 and rewrites f1 to a file of a new object.
    indexDatabase(delta, [['f0.md', N + 1, 'file-0', 1], ['f1.md', N + 2, 'file-new', 0]], [['file-new', JSON.stringify([part('object-new')])]])
    const sets = new ObjectSets(join(dir, 'sets.sqlite'))
    try {
      sets.take(base, false)
      sets.take(delta, false)
      sets.keptAt(A, N + 2)
      sets.settle()
      // object-0 held only f0 (deleted), object-1 f0 and f1's old version (replaced); object-2 also f2, live.
      expect(deadOf(sets, ['object-0', 'object-1', 'object-2', 'object-new', 'object-odd', `object-${N}`])).toEqual(['object-0', 'object-1', 'object-odd'])
    } finally {
      sets.close()
    }
  })

  it('a publish kept at an older sequence keeps what it held then; a `/1` snapshot keeps every file it lists', async () => {
    const dir = await useTempDir()
    const base = join(dir, 'base.sqlite')
    const delta = join(dir, 'delta.sqlite')
    const v1 = join(dir, 'v1.sqlite')
    indexDatabase(base, [['a.md', 1, 'file-a', 0]], [['file-a', JSON.stringify([['object-a', 0, 1]])]])
    indexDatabase(delta, [['a.md', 2, 'file-b', 0]], [['file-b', JSON.stringify([['object-b', 0, 1]])]])
    indexDatabase(v1, [['c.md', 9, 'file-c', 0], ['d.md', 9, 'file-d', 1]], [['file-c', JSON.stringify([['object-c', 0, 1]])], ['file-d', JSON.stringify([['object-d', 0, 1]])]])
    const sets = new ObjectSets(join(dir, 'sets.sqlite'))
    try {
      for (const p of [base, delta]) sets.take(p, false)
      sets.take(v1, true)
      sets.keptAt(A, 1)
      sets.keptAt(A, 2)
      sets.settle()
      expect(deadOf(sets, ['object-a', 'object-b', 'object-c', 'object-d'])).toEqual(['object-d'])
    } finally {
      sets.close()
    }
  })

  it('names, of each record, exactly the objects the records\' JavaScript reader names, however odd its JSON', async () => {
    const dir = await useTempDir()
    const path = join(dir, 'odd.sqlite')
    const odd = [
      '[["o-plain",0,1]]', '[["o-dup",0,1],["o-dup",1,1]]', '[[["o-nested"],0,1]]', '[[5,0,1],["o-after-number",0,1]]', '[null,["o-after-null",0,1]]',
      '[{"0":"o-object"}]', '[{"0":["o-keyed"]}]', '{"0":["o-keyed-map"]}', '[["o-alone"]]', '["o-flat"]', '[["o-trailing",0,1],]', "[['o-quoted',0,1]]", ' \n[["o-spaced",0,1]]\t',
      '[["\\u006f-escaped",0,1]]', '[["o-big",1e999,1]]', '{"a":[["o-in-map"]]}', '5', 'null', '"[[\\"o-string\\"]]"', '[]', '',
      JSON.stringify(Array.from({ length: 5000 }, (_, i) => [`o-long-${i % 2500}`, i, 1]))
    ]
    // Every file is deleted: each object a record names is a candidate, and none is kept.
    indexDatabase(path, odd.map((_, i): [string, number, string, number] => [`f${i}`, i + 1, `file-${i}`, 1]), odd.map((json, i): [string, string] => [`file-${i}`, json]))
    const sets = new ObjectSets(join(dir, 'sets.sqlite'))
    try {
      // A database without the tables fails its take; the next one is still taken.
      const empty = join(dir, 'empty.sqlite')
      new Database(empty).close()
      expect(() => { sets.take(empty, false) }).toThrow()
      sets.take(path, false)
      sets.keptAt(A, odd.length)
      sets.settle()
      const named = [...new Set(odd.flatMap(json => objectCidsOf(json)))].sort()
      expect(named).toContain('o-escaped')
      expect(deadOf(sets, [...named, 'o-nested', 'o-object', 'o-keyed', 'o-keyed-map', 'o-flat', 'o-in-map', 'o-string', 'o-trailing', 'o-quoted'])).toEqual(named)
    } finally {
      sets.close()
    }
  })
  it('reads where each blob lies alike from a record of one object and of several', async () => {
    const dir = await useTempDir()
    const path = join(dir, 'blobs.sqlite')
    const records: Array<[string, string]> = [
      ['file-1', '[["o1",5,7]]'], ['file-2', '[["o2","5",7]]'], ['file-3', '[["o3",5]]'], ['file-4', '[["o4",1.5,2]]'],
      ['file-5', '[["o5",0,3],["o6",3,4]]'], ['file-6', ' [ [ "o1" , 12 , 8 ] ] ']
    ]
    indexDatabase(path, records.map(([cid], i): [string, number, string, number] => [`f${i}`, i + 1, cid, 0]), records)
    const sets = new ObjectSets(join(dir, 'sets.sqlite'))
    try {
      sets.take(path, false)
      sets.keptAt(A, records.length)
      sets.settle()
      expect(sets.liveBlobs('o1')).toEqual([{ file: 'file-1', offset: 5, length: 7 }, { file: 'file-6', offset: 12, length: 8 }])
      expect(sets.liveBlobs('o2')).toEqual([{ file: 'file-2', offset: -1, length: 7 }])
      expect(sets.liveBlobs('o3')).toEqual([])
      expect(sets.liveBlobs('o4')).toEqual([{ file: 'file-4', offset: -1, length: 2 }])
      expect([...sets.liveBlobs('o5'), ...sets.liveBlobs('o6')]).toEqual([{ file: 'file-5', offset: 0, length: 3 }, { file: 'file-5', offset: 3, length: 4 }])
      for (const o of ['o1', 'o2', 'o3', 'o4', 'o5', 'o6']) sets.listed(o, 100, 0)
      // Only o1 may move: o5 and o6 hold a file of two parts, the others a blob of unknown place.
      expect(sets.livePacks(A).filter(p => p.movable).map(p => p.cid)).toEqual(['o1'])
    } finally {
      sets.close()
    }
  })

  it('an older version of a record keeps nothing; another device\'s or another key\'s version keeps its own', async () => {
    const dir = await useTempDir()
    const B = 'bbbbbbbb-0000-4000-8000-000000000000'
    const base = join(dir, 'base.sqlite')
    const delta = join(dir, 'delta.sqlite')
    // Three live files packed in object-x; a fourth, deleted, too.
    indexDatabase(base, [['a', 1, 'file-a', 0], ['b', 2, 'file-b', 0], ['c', 3, 'file-c', 0], ['d', 4, 'file-d', 1]], [
      ['file-a', JSON.stringify([['object-x', 0, 100]]), 5],
      ['file-b', JSON.stringify([['object-x', 100, 50]]), 6],
      ['file-c', JSON.stringify([['object-y', 0, 70]]), 7],
      ['file-d', JSON.stringify([['object-x', 150, 850]]), 8]
    ])
    // The delta moves a's blob to object-new (a repack); b's and c's stay where they were.
    indexDatabase(delta, [], [
      ['file-a', JSON.stringify([['object-new', 0, 100]]), 9],
      ['file-c', JSON.stringify([['object-z', 0, 70]]), 3, B],
      ['file-b', JSON.stringify([['object-w', 0, 50]]), 10, A, 'k2']
    ])
    const sets = new ObjectSets(join(dir, 'sets.sqlite'))
    try {
      sets.take(base, false)
      sets.take(delta, false)
      sets.keptAt(A, 10)
      sets.settle()
      for (const [cid, size] of [['object-x', 1000], ['object-y', 70], ['object-z', 70], ['object-new', 100], ['object-w', 50]] as const) sets.listed(cid, size, 0)
      const packs = sets.livePacks(A)
      // object-x: only b's 50 bytes live (a's newest version names object-new), and A's alone: movable.
      expect(packs[0]).toEqual({ cid: 'object-x', size: 1000, storedAt: 0, liveBytes: 50, movable: true })
      expect(sets.liveBlobs('object-x')).toEqual([{ file: 'file-b', offset: 100, length: 50 }])
      expect(packs.find(p => p.cid === 'object-z')?.movable).toBe(false)
      expect(sets.dead(1).map(d => d.cid)).toEqual([])
    } finally {
      sets.close()
    }
  })

  it('settles a device\'s only base from its file to exactly what taking it whole gives', async () => {
    const dir = await useTempDir()
    const B = 'bbbbbbbb-0000-4000-8000-000000000000'
    const random = seededRandom(7)
    // Mostly an object of its own, so what each record keeps shows; some shared, some of two parts, some odd.
    let made = 0
    const objects = (): string => {
      const one = (): string => `o${random(10) === 0 ? random(made + 1) : ++made}`
      if (random(4) === 0) return JSON.stringify([[one(), 0, 5], [one(), 5, 5]])
      if (random(12) === 0) return ['not json', '[]', '[["o-odd"]]'][random(3)] ?? ''
      return JSON.stringify([[one(), random(1000), 1 + random(50)]])
    }
    for (let round = 0; round < 12; round++) {
      const paths = 30 + random(30)
      let seq = 0
      const base = join(dir, `base-${round}.sqlite`)
      const baseTo = paths * 2
      indexDatabase(base, Array.from({ length: paths }, (_, i): [string, number, string | null, number] => [`p${i}`, ++seq, random(7) === 0 ? null : `file-${i}`, random(8) === 0 ? 1 : 0]),
        Array.from({ length: paths }, (_, i): [string, string, number, string?, string?] => [`file-${i}`, objects(), ++seq, random(6) === 0 ? B : A, random(6) === 0 ? 'k2' : 'k1']))
      // Kept publishes at the base's end, at some deltas' ends, at the last; in some rounds one inside the base, alone.
      const inside = random(4) === 0
      const tos = inside ? [1 + random(paths)] : [seq]
      const deltas = Array.from({ length: 1 + random(4) }, (_, d) => {
        const path = join(dir, `delta-${round}-${d}.sqlite`)
        const changed = [...new Set(Array.from({ length: 1 + random(8) }, () => random(paths + 5)))]
        indexDatabase(path, changed.map((p): [string, number, string | null, number] => [`p${p}`, ++seq, `file-${random(paths + 10)}`, random(5) === 0 ? 1 : 0]),
          changed.map((p): [string, string, number, string?, string?] => [`file-${p}`, objects(), ++seq, random(5) === 0 ? B : A, random(5) === 0 ? 'k2' : 'k1']))
        if (!inside && random(2) === 0) tos.push(seq)
        return path
      })
      if (!inside) tos.push(seq)
      const settled = (whole: boolean): unknown => {
        const sets = new ObjectSets(join(dir, `sets-${round}-${String(whole)}.sqlite`))
        try {
          if (whole) sets.take(base, false)
          for (const delta of deltas) sets.take(delta, false)
          for (const to of tos) sets.keptAt(A, to)
          sets.settle(whole ? [] : [{ path: base, device: A, to: baseTo }])
          const all = Array.from({ length: made + 1 }, (_, i) => `o${i}`).concat('o-odd')
          all.forEach((o, i) => { sets.listed(o, 1000 + i, 0) })
          return { dead: sets.dead(1), packs: sets.livePacks(A), blobs: all.map(o => sets.liveBlobs(o)) }
        } finally {
          sets.close()
        }
      }
      const whole = settled(true) as { dead: unknown[] }
      expect(whole.dead.length).toBeGreaterThan(0)
      expect(settled(false)).toEqual(whole)
    }
  })

  it('breaks a tie of sequence as taking the base first did: the base\'s row and record win', async () => {
    const dir = await useTempDir()
    const base = join(dir, 'base.sqlite')
    const delta = join(dir, 'delta.sqlite')
    // A device that reused sequence 5 for p, and 8 for file-Y's record (lengths 10 and 20).
    indexDatabase(base, [['p', 5, 'file-X', 0], ['q', 6, 'file-Y', 0]], [['file-X', '[["oX",0,10]]', 7], ['file-Y', '[["oY",0,10]]', 8]])
    indexDatabase(delta, [['p', 5, null, 1]], [['file-Y', '[["oY",0,20]]', 8]])
    const run = (whole: boolean): unknown => {
      const sets = new ObjectSets(join(dir, `sets-${String(whole)}.sqlite`))
      try {
        if (whole) sets.take(base, false)
        sets.take(delta, false)
        sets.keptAt(A, 8)
        sets.settle(whole ? [] : [{ path: base, device: A, to: 8 }])
        for (const o of ['oX', 'oY']) sets.listed(o, 100, 0)
        return { dead: sets.dead(1).map(d => d.cid), blobs: sets.liveBlobs('oY') }
      } finally {
        sets.close()
      }
    }
    expect(run(true)).toEqual({ dead: [], blobs: [{ file: 'file-Y', offset: 0, length: 10 }] })
    expect(run(false)).toEqual(run(true))
  })
})
