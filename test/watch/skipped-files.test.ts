import { describe, it, expect, afterEach } from 'vitest'
import { SkippedFiles } from '../../src/watch/skipped-files.js'
import { bound, until } from '../helpers/wait.js'

const lists: SkippedFiles[] = []
afterEach(() => { for (const l of lists.splice(0)) l.close() })

function track (minRetryMs: number, onDue: (path: string, kind: 'file' | 'dir') => void): SkippedFiles {
  const list = new SkippedFiles({ onDue, minRetryMs, maxRetryMs: minRetryMs * 4 })
  lists.push(list)
  return list
}

describe('skipped files', () => {
  it('retries a path with a doubling, bounded wait until it is cleared, counting the retries', async () => {
    const due: number[] = []
    let list: SkippedFiles | undefined
    // A transient EMFILE: still failing for three tries, then fine.
    list = track(40, (path) => {
      due.push(Date.now())
      if (due.length < 4) list?.note(path, 'EMFILE')
      else list?.clear(path)
    })
    const started = Date.now()
    expect(list.note('a.txt', 'EMFILE')).toBe(true)
    expect(list.note('a.txt', 'EMFILE')).toBe(false)
    await until(() => due.length >= 4 ? true : undefined, 5_000, 'four retries')
    expect(list.size).toBe(0)
    const gaps = due.map((at, i) => at - (i === 0 ? started : due[i - 1] as number))
    // 80 (the second note doubled it), then 160 twice (capped at 4 x 40).
    expect(gaps[0]).toBeGreaterThanOrEqual(75)
    expect(gaps[2]).toBeGreaterThanOrEqual(150)
    // Still coming, not left to a far-off timer: bounded as any wait here, since a loaded machine runs timers late.
    expect(gaps[3]).toBeLessThan(bound(1_000))
  })

  it('lists what stays skipped with why, since when and how often, bounded; never retries what waiting cannot fix', async () => {
    const due: string[] = []
    const list = track(20, path => { due.push(path); list.note(path, 'EACCES') })
    list.note('name-not-utf8', 'ERR_NAME_ENCODING', { retry: false })
    list.note('private', 'EACCES', { kind: 'dir' })
    for (let i = 0; i < 150; i++) list.note(`f${i}`, 'EACCES')
    await until(() => due.filter(p => p === 'private').length >= 2 ? true : undefined, 5_000, 'the directory to be retried twice')
    expect(due).not.toContain('name-not-utf8')
    expect(list.size).toBe(152)
    const shown = list.list()
    expect(shown).toHaveLength(100)
    expect(shown[0]).toMatchObject({ path: 'name-not-utf8', kind: 'file', reason: 'ERR_NAME_ENCODING', retries: 0, nextRetryAt: null, since: expect.any(String) })
    expect(shown[1]).toMatchObject({ path: 'private', kind: 'dir', reason: 'EACCES', retries: expect.any(Number) })
    expect(shown[1]?.retries).toBeGreaterThanOrEqual(2)
    // Each with what to do, in the words status and the dashboard use.
    expect(shown[1]?.advice).toBe('the directory cannot be read: fix its permissions, it is picked up without a restart')
    expect(shown[0]?.advice).toMatch(/^the file could not be read \(ERR_NAME_ENCODING\): it is retried/)
    list.clearTree('private')
    expect(list.has('private')).toBe(false)
  })

  it('counts the links not followed and special files apart, as they come and go', () => {
    const list = track(1_000, () => {})
    list.skip('link', 'ERR_SYMLINK_NOT_FOLLOWED')
    list.skip('dir/fifo', 'ERR_SPECIAL_FILE')
    list.skip('dir/secret', 'EACCES')
    expect([list.size, list.withoutContent]).toEqual([3, 2])
    // The same path for another reason: counted once, for the reason it has now.
    list.note('link', 'EACCES')
    expect([list.size, list.withoutContent]).toEqual([3, 1])
    list.clearTree('dir')
    expect([list.size, list.withoutContent]).toEqual([1, 0])
  })
})
