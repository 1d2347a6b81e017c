import { describe, expect, it } from 'vitest'
import { packsToRewrite } from '../../../src/sync/prune/repack.js'
import { seededRandom } from '../../helpers/seeded-random.js'

const MiB = 1024 * 1024

interface Pack { readonly cid: string, readonly size: number, readonly liveBytes: number, readonly movable: boolean }

/** As `livePacks` orders them: the most unused share first. */
const ordered = (packs: readonly Pack[]): Array<Pack & { storedAt: null }> =>
  [...packs].sort((a, b) => (b.size - b.liveBytes) / b.size - (a.size - a.liveBytes) / a.size || (a.cid < b.cid ? -1 : 1)).map(p => ({ ...p, storedAt: null }))

/** The packs once a repack's plan ran and a prune after the next publish deleted the old ones: their live bytes in new packs. */
function afterRepack (packs: readonly Pack[], round: number): Pack[] {
  const rewritten = new Set([...packsToRewrite(ordered(packs))].map(r => r.pack.cid))
  const moved = packs.filter(p => rewritten.has(p.cid)).reduce((sum, p) => sum + p.liveBytes, 0)
  const kept = packs.filter(p => !rewritten.has(p.cid))
  const made: Pack[] = []
  for (let at = 0; at < moved; at += 16 * MiB) made.push({ cid: `new-${round}-${at}`, size: Math.min(16 * MiB, moved - at), liveBytes: Math.min(16 * MiB, moved - at), movable: true })
  return [...kept, ...made]
}

const unusedShare = (packs: readonly Pack[]): number =>
  packs.reduce((s, p) => s + p.size - p.liveBytes, 0) / packs.reduce((s, p) => s + p.size, 0)

describe('which packs a repack rewrites', () => {
  it('leaves at most 5% unused once the old packs are gone, so the next prune rewrites none', () => {
    // One mostly unused pack, and two with a little unused each: 30 MiB held, 10.4 MiB unused.
    const before: Pack[] = [
      { cid: 'mostly-unused', size: 10 * MiB, liveBytes: 1 * MiB, movable: true },
      { cid: 'p2', size: 10 * MiB, liveBytes: 9.3 * MiB, movable: true },
      { cid: 'p3', size: 10 * MiB, liveBytes: 9.3 * MiB, movable: true }
    ]
    const after = afterRepack(before, 1)
    expect(unusedShare(after)).toBeLessThanOrEqual(0.05)
    expect([...packsToRewrite(ordered(after))]).toEqual([])
  })

  it('settles in one round over random accounts, packs another device names included', () => {
    const random = seededRandom(99)
    for (let round = 0; round < 200; round++) {
      const packs: Pack[] = Array.from({ length: 1 + random(40) }, (_, i) => {
        const size = (1 + random(16)) * MiB
        return { cid: `p${i}`, size, liveBytes: Math.floor(size * random(101) / 100), movable: random(8) !== 0 }
      })
      const after = afterRepack(packs, round)
      const rewrittenAgain = [...packsToRewrite(ordered(after))].map(r => r.pack.cid)
      expect(rewrittenAgain, `round ${round}`).toEqual([])
    }
  })
})
