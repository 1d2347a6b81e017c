import { describe, expect, it } from 'vitest'
import { join } from 'node:path'
import { HistoryRows, type PublishSeen } from '../../src/find/history-rows.js'
import { useTempDir } from '../helpers/temp-dir.js'

const p = (cid: string, previous: string | null, seqs: Array<[string, number]>): PublishSeen => ({ cid, at: '2026-01-01T00:00:00.000Z', device: 'd', readable: true, previous, seqs })

describe('attack2: keptChain bounds', () => {
  it('a looping chain in the cache is answered quickly, not as a million publishes', async () => {
    const rows = new HistoryRows(join(await useTempDir(), 'h.sqlite'))
    rows.notePublishes([p('A', 'B', [['d', 5]]), p('B', 'A', [['d', 3]])], 'A')
    const t = Date.now()
    const chain = rows.keptChain()
    const ms = Date.now() - t
    console.log('loop', chain?.publishes, ms, 'ms')
    expect(ms).toBeLessThan(1000)
    expect(chain === undefined || chain.publishes <= 2).toBe(true)
  }, 120_000)

  it('a long history (50,000 publishes, 4 devices): keptChain stays fast', async () => {
    const rows = new HistoryRows(join(await useTempDir(), 'h.sqlite'))
    const n = 50_000
    const all: PublishSeen[] = []
    for (let i = 0; i < n; i++) all.push(p(`P${i}`, i === 0 ? null : `P${i - 1}`, [['a', i], ['b', i], ['c', i], ['e', i]]))
    rows.notePublishes(all, `P${n - 1}`)
    const t = Date.now()
    const chain = rows.keptChain()
    const ms = Date.now() - t
    console.log('long', chain?.publishes, ms, 'ms')
    expect(chain?.publishes).toBe(n)
    expect(chain?.held('a', 7, 8)).toBe(true)
  }, 120_000)
})
