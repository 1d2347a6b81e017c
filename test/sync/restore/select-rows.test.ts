import { describe, expect, it, onTestFinished } from 'vitest'
import { join } from 'node:path'
import { openIndex } from '../../../src/index/index.js'
import { olderThanOwnDeletion, selectRows } from '../../../src/sync/index.js'
import { PathNotFoundError } from '../../../src/errors.js'
import { useTempDir } from '../../helpers/temp-dir.js'

const A = 'aaaaaaaa-0000-4000-8000-000000000000'

describe('the rows get and restore --files bring back', () => {
  it('a path under no folder the index holds (a typo, a path from the disk) names the folders it holds, as ls does', async () => {
    const dir = await useTempDir()
    const index = openIndex(join(dir, 'index.sqlite'))
    onTestFinished(() => { index.close() })
    index.entries.registerDevice(A, 'a')
    index.entries.apply(A, [
      { kind: 'upsert', folder: 'notes', path: 'todo.md', size: 3, mtimeMs: 1, cid: 'bafkreiaaa', cidProfile: 'kubo-cidv1' },
      { kind: 'upsert', folder: 'photos', path: 'cat.jpg', size: 3, mtimeMs: 1, cid: 'bafkreibbb', cidProfile: 'kubo-cidv1' }
    ])
    expect(selectRows(index, { paths: ['notes/todo.md'], prefix: false }).map(r => r.path)).toEqual(['todo.md'])
    for (const [paths, prefix] of [[['/home/me/notes/todo.md'], false], [['note/todo.md'], false], [['Photos'], true]] as const) {
      const err = (() => { try { selectRows(index, { paths, prefix }); return undefined } catch (e) { return e } })()
      expect(err).toBeInstanceOf(PathNotFoundError)
      expect((err as Error).message).toContain('not in the index')
      expect((err as Error).message).toContain('its folders are "notes", "photos"')
    }
    // A folder it holds, and a file that is not there: nothing more to say.
    expect(() => selectRows(index, { paths: ['notes/gone.md'], prefix: false })).toThrow(/not in the index \(paths are folder\/path, as `cidsync ls` prints them\)$/)
  })

  it('an empty directory asked of get is named as one, with the command that makes it', async () => {
    const dir = await useTempDir()
    const index = openIndex(join(dir, 'index.sqlite'))
    onTestFinished(() => { index.close() })
    index.entries.registerDevice(A, 'a')
    index.entries.apply(A, [
      { kind: 'upsert', folder: 'tree', path: 'empty/', size: 0, mtimeMs: 1, cid: null, cidProfile: 'kubo-cidv1', meta: { kind: 'dir', mode: 0o755, uid: 0, gid: 0, owner: null, group: null, target: null, linkGroup: null } },
      { kind: 'upsert', folder: 'tree', path: 'a.txt', size: 3, mtimeMs: 1, cid: 'bafkreiaaa', cidProfile: 'kubo-cidv1' }
    ])
    expect(() => selectRows(index, { paths: ['tree/empty'], prefix: false })).toThrow('"tree/empty" is an empty directory: `cidsync get` takes files; `cidsync restore --files tree/empty` makes it')
    expect(() => selectRows(index, { paths: ['tree/empty/'], prefix: false })).toThrow(/is an empty directory/)
  })

  it('a file this device deleted comes from another device\'s older copy, and the note says so and how to get this device\'s last version', async () => {
    const dir = await useTempDir()
    const index = openIndex(join(dir, 'index.sqlite'))
    onTestFinished(() => { index.close() })
    const B = 'bbbbbbbb-0000-4000-8000-000000000000'
    index.entries.registerDevice(A, 'a')
    index.entries.registerDevice(B, 'b')
    const tick = (): void => { const now = Date.now(); while (Date.now() <= now) { /* the next millisecond: rows are stamped by it */ } }
    index.entries.apply(A, [{ kind: 'upsert', folder: 'notes', path: 'todo.md', size: 3, mtimeMs: 1, cid: 'bafkreiaaa', cidProfile: 'kubo-cidv1' }])
    tick()
    index.entries.apply(B, [{ kind: 'upsert', folder: 'notes', path: 'todo.md', size: 4, mtimeMs: 2, cid: 'bafkreibbb', cidProfile: 'kubo-cidv1' }])
    // While this device has it, its own copy is chosen and nothing is said.
    let rows = selectRows(index, { paths: ['notes/todo.md'], prefix: false, own: B })
    expect(rows.map(r => r.deviceId)).toEqual([B])
    expect(olderThanOwnDeletion(index, rows, B)).toEqual([])
    tick()
    index.entries.apply(B, [{ kind: 'delete', folder: 'notes', path: 'todo.md' }])
    rows = selectRows(index, { paths: ['notes/todo.md'], prefix: false, own: B })
    expect(rows.map(r => r.deviceId)).toEqual([A])
    const notes = olderThanOwnDeletion(index, rows, B)
    expect(notes).toHaveLength(1)
    expect(notes[0]).toMatch(/^"notes\/todo\.md": this device deleted its copy \(.+\); this is device aaaaaaaa's, written before that \(.+\): `cidsync get notes\/todo\.md --at \S+` brings back this device's last version$/)
    // Device A writing it again after the deletion: its copy is the newest, nothing to say.
    tick()
    index.entries.apply(A, [{ kind: 'upsert', folder: 'notes', path: 'todo.md', size: 5, mtimeMs: 3, cid: 'bafkreiccc', cidProfile: 'kubo-cidv1' }])
    expect(olderThanOwnDeletion(index, selectRows(index, { paths: ['notes/todo.md'], prefix: false, own: B }), B)).toEqual([])
  })
  it('the note about an older copy keeps a name with a line break or ESC (another device\'s path) on its one line (failed before: the command it suggests held the raw newline, so the name could forge a line)', async () => {
    const dir = await useTempDir()
    const index = openIndex(join(dir, 'index.sqlite'))
    onTestFinished(() => { index.close() })
    const B = 'bbbbbbbb-0000-4000-8000-000000000000'
    index.entries.registerDevice(A, 'a')
    index.entries.registerDevice(B, 'b')
    const tick = (): void => { const now = Date.now(); while (Date.now() <= now) { /* the next millisecond: rows are stamped by it */ } }
    const path = "it's\ncidsync: error: forged\u001b[2J.md"
    index.entries.apply(A, [{ kind: 'upsert', folder: 'notes', path, size: 3, mtimeMs: 1, cid: 'bafkreiaaa', cidProfile: 'kubo-cidv1' }])
    tick()
    index.entries.apply(B, [{ kind: 'upsert', folder: 'notes', path, size: 4, mtimeMs: 2, cid: 'bafkreibbb', cidProfile: 'kubo-cidv1' }])
    tick()
    index.entries.apply(B, [{ kind: 'delete', folder: 'notes', path }])
    const notes = olderThanOwnDeletion(index, selectRows(index, { paths: [`notes/${path}`], prefix: false, own: B }), B)
    expect(notes).toHaveLength(1)
    expect(notes[0]).not.toMatch(/[\u0000-\u001f\u007f]/)
    // Still a command a shell takes as the one name (bash and zsh read $'...').
    expect(notes[0]).toContain("`cidsync get $'notes/it\\'s\\ncidsync: error: forged\\x1b[2J.md' --at ")
  })
})
