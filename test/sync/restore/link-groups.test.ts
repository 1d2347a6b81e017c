import { describe, expect, it } from 'vitest'
import type { Entry } from '../../../src/index/index.js'
import { promoteKeptFirsts, splitRows } from '../../../src/sync/restore/link-groups.js'

function row (path: string, cid: string | null, meta: Record<string, unknown> | null, deviceId = 'dev'): Entry {
  return { deviceId, folder: 'f', path, cid, meta } as unknown as Entry
}

describe('hard-link groups in a restore', () => {
  it('fetches one name a group, links the others to it, and places symlinks and directories apart', () => {
    const a = row('a', 'C1', { kind: 'file', linkGroup: 'g1' })
    const b = row('b', 'C1', { kind: 'file', linkGroup: 'g1' })
    // The same group on another device, or with other bytes, is another group.
    const c = row('c', 'C1', { kind: 'file', linkGroup: 'g1' }, 'other')
    const d = row('d', 'C2', { kind: 'file', linkGroup: 'g1' })
    const plain = row('plain', 'C3', null)
    const unstored = row('none', null, { kind: 'file' })
    const link = row('link', null, { kind: 'symlink', target: 'a' })
    const dir = row('dir/', null, { kind: 'dir' })
    const split = splitRows([a, link, b, c, d, plain, unstored, dir])
    expect(split.files).toEqual([a, c, d, plain])
    expect(split.linked).toEqual([{ row: b, first: a }])
    expect(split.entries).toEqual([link, dir])
  })

  it('fetches a group\'s next name when its first was kept, and links the rest to that one', () => {
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map(p => row(p, 'C1', { kind: 'file', linkGroup: 'g' })) as [Entry, Entry, Entry, Entry]
    const x = row('x', 'C2', { kind: 'file', linkGroup: 'h' })
    const y = row('y', 'C2', { kind: 'file', linkGroup: 'h' })
    const promoted = promoteKeptFirsts([{ row: b, first: a }, { row: c, first: a }, { row: d, first: a }, { row: y, first: x }], new Set(['f/a']))
    expect(promoted.rows).toEqual([b])
    expect(promoted.linked).toEqual([{ row: c, first: b }, { row: d, first: b }, { row: y, first: x }])
  })
})
