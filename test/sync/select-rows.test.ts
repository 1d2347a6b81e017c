import { describe, expect, it, onTestFinished } from 'vitest'
import { join } from 'node:path'
import { openIndex } from '../../src/index/index.js'
import { selectRows } from '../../src/sync/index.js'
import { PathNotFoundError } from '../../src/errors.js'
import { useTempDir } from '../helpers/temp-dir.js'

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
})
