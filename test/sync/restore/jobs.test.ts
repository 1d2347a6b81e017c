import { describe, expect, it } from 'vitest'
import { cidProfile } from '../../../src/content/index.js'
import type { ContentRecord } from '../../../src/custody/index.js'
import type { Entry } from '../../../src/index/index.js'
import { availableParallelism } from 'node:os'
import { byRangeWhereFew, EVERY_CORE_LARGE_BYTES, fetchOrder, packOf, RANGE_READERS, restoreThreads, type Job } from '../../../src/sync/restore/jobs.js'

const P = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'
const Q = 'bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi'

function job (at: number, objects: ContentRecord['objects'], streamed = false): Job {
  const record: ContentRecord = { cid: `cid-${at}`, size: 10, sealing: 'aes-256-gcm/1', keyId: '0123456789abcdef', keySalt: '', objects }
  return { at, row: { folder: 'f', path: `p-${at}` } as Entry, record, profile: cidProfile('kubo-cidv1'), root: '/r', target: `/r/p-${at}`, targetDir: '/r', key: undefined, streamed, replace: false, attrs: { mode: 0o644 } }
}

describe('the order a restore brings files back in', () => {
  it('reads by range the files of a pack it wants few of, where the store can stream; the packs it wants many of whole', () => {
    const few = Array.from({ length: RANGE_READERS }, (_, i) => job(i, [[P, i * 100, 26]]))
    const many = Array.from({ length: RANGE_READERS + 1 }, (_, i) => job(100 + i, [[Q, i * 100, 26]]))
    const large = job(500, [[P, 0, 10], [Q, 0, 10]], true)
    const jobs = [...few, ...many, large]
    const marked = byRangeWhereFew(jobs, true)
    expect(marked.filter(j => j.byRange === true).map(j => j.at)).toEqual(few.map(j => j.at))
    expect(marked.filter(j => packOf(j) !== undefined).map(j => j.at)).toEqual(many.map(j => j.at))
    // Read by range, they come first with the large files, then the pack read whole.
    expect(fetchOrder(marked).map(j => j.at)).toEqual([...few.map(j => j.at), 500, ...many.map(j => j.at)])
    // A store that cannot stream: every pack read whole.
    expect(byRangeWhereFew(jobs, false).filter(j => j.byRange === true)).toEqual([])
  })
})

describe('the sealing threads a restore opens files in', () => {
  it('one a core but one for small files; one a core from enough large files; never none, never past four', () => {
    const cores = availableParallelism()
    expect(restoreThreads(0)).toBe(Math.max(1, Math.min(4, cores - 1)))
    expect(restoreThreads(EVERY_CORE_LARGE_BYTES - 1)).toBe(restoreThreads(0))
    expect(restoreThreads(EVERY_CORE_LARGE_BYTES)).toBe(Math.max(1, Math.min(4, cores)))
  })
})
