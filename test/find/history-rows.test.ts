import { describe, expect, it } from 'vitest'
import Database from 'better-sqlite3'
import { join } from 'node:path'
import { HistoryRows, historyChainKey } from '../../src/find/index.js'
import { useTempDir } from '../helpers/temp-dir.js'

const MINE = historyChainKey('default', 'mainnet')
const publish = (cid: string, previous: string | null, seqs: Array<[string, number]>): Parameters<HistoryRows['notePublishes']>[0][number] =>
  ({ cid, at: '2026-03-01T00:00:00.000Z', device: 'a', readable: true, previous, seqs })

describe('the chain the history rows are shown for', () => {
  it('holds a version while a publish of the chain last walked has its device between it and the next version', async () => {
    const rows = new HistoryRows(join(await useTempDir(), 'h.sqlite'))
    try {
      expect(rows.keptChain(MINE)).toBeUndefined()
      // p1 (a at 3), p2 (a at 7, b at 2), p3 (a at 9): a forget then kept p3 and p1, linked anew as q3 -> q1.
      rows.notePublishes([publish('p3', 'p2', [['a', 9]]), publish('p2', 'p1', [['a', 7], ['b', 2]]), publish('p1', null, [['a', 3]])], 'p3', MINE)
      const all = rows.keptChain(MINE)
      expect(all?.publishes).toBe(3)
      expect(all?.held('a', 5, 8)).toBe(true) // p2 at 7
      expect(all?.held('a', 8, 10)).toBe(true) // p3 at 9
      expect(all?.held('a', 4, 5)).toBe(false) // written and replaced between two publishes
      expect(all?.held('b', 2, undefined)).toBe(true)
      rows.notePublishes([publish('q3', 'q1', [['a', 9]]), publish('q1', null, [['a', 3]])], 'q3', MINE)
      const kept = rows.keptChain(MINE)
      expect(kept?.publishes).toBe(2)
      expect(kept?.held('a', 5, 8)).toBe(false) // only p2, forgotten, held it
      expect(kept?.held('a', 1, 5)).toBe(true)
      expect(kept?.held('b', 2, undefined)).toBe(false)
      expect(kept?.held('c', 1, undefined)).toBe(false)
    } finally {
      rows.close()
    }
  })

  it('answers no chain where a link is missing, and walks again what an older cidsync noted without links', async () => {
    const path = join(await useTempDir(), 'h.sqlite')
    const rows = new HistoryRows(path)
    rows.notePublishes([publish('p2', 'p1', [['a', 2]])], 'p2', MINE)
    // p1 was never noted: the chain cannot be followed whole, so nothing is hidden for it.
    expect(rows.keptChain(MINE)).toBeUndefined()
    rows.close()
    const older = new Database(path)
    older.prepare("INSERT INTO publishes_seen (cid, at, device, readable) VALUES ('old', '2026-01-01T00:00:00.000Z', 'a', 1)").run()
    older.close()
    const reopened = new HistoryRows(path)
    try {
      expect(reopened.hasPublish('old')).toBe(false)
      expect(reopened.hasPublish('p2')).toBe(true)
    } finally {
      reopened.close()
    }
  })

  it('keeps a head per namespace and network, and follows no looping chain (a damaged cache)', async () => {
    const rows = new HistoryRows(join(await useTempDir(), 'h.sqlite'))
    try {
      rows.notePublishes([publish('p1', null, [['a', 3]])], 'p1', MINE)
      rows.notePublishes([publish('o1', null, [['b', 1]])], 'o1', historyChainKey('other', 'mainnet'))
      expect(rows.keptChain(MINE)?.reaches('a', 3)).toBe(true)
      expect(rows.keptChain(MINE)?.reaches('b', 1)).toBe(false)
      expect(rows.keptChain(historyChainKey('default', 'testnet'))).toBeUndefined()
      rows.notePublishes([publish('A', 'B', [['a', 5]]), publish('B', 'A', [['a', 3]])], 'A', MINE)
      expect(rows.keptChain(MINE)).toBeUndefined()
      // A long history is followed whole.
      const long = Array.from({ length: 20_000 }, (_, i) => publish(`P${i}`, i === 0 ? null : `P${i - 1}`, [['a', i], ['b', i]]))
      rows.notePublishes(long, 'P19999', MINE)
      expect(rows.keptChain(MINE)?.publishes).toBe(20_000)
      expect(rows.chainFrom('P19999')?.includes('P5')).toBe(true)
    } finally {
      rows.close()
    }
  })
})
