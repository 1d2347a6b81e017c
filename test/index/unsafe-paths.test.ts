import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { UNSAFE_FOLDER, UNSAFE_FOLDERS, UNSAFE_PATH, UNSAFE_PATHS, UNSAFE_ROW } from '../../src/index/unsafe-paths.js'

// Every row shape the walker never writes, and look-alikes it does write (`a..b`, `.hidden`).
const CASES: Array<[folder: string, path: string, unsafe: boolean]> = [
  ['f', '', true], ['f', '/a', true], ['f', 'a//b', true], ['f', 'a\0b', true],
  ['f', '.', true], ['f', '..', true], ['f', './a', true], ['f', '../a', true], ['f', 'a/.', true], ['f', 'a/..', true],
  ['f', 'a/./b', true], ['f', 'a/../b', true], ['f', '/', true],
  ['', 'a', true], ['.', 'a', true], ['..', 'a', true], ['a/b', 'c', true], ['a\0', 'c', true],
  ['f', 'a/b.c', false], ['f', '.a', false], ['f', 'a..b', false], ['f', 'a/.b/c', false], ['f', '...', false], ['f', 'a/..b', false],
  ['f', 'b../c', false], ['f', 'é/ü.txt', false], ['.f', 'a', false],
  // A component starting with '.' (a hidden file) is searched further; one without is answered before.
  ['f', '.a/../b', true], ['f', 'a/.b/.', true], ['f', '.git/config', false], ['f', 'a/.b/..c/d.', false], ['f', '.a/\0', true], ['.', '.a', true],
  // Paths a restore answers without the full test (first character from '0' up, no NUL, no '//' or '/.' in path + '/') and those it does not.
  ['f', 'a\0', true], ['f', '0', false], ['f', '-a', false], [' ', ' a', false], ['f', '#a/b', false], ['f', '!', false], ['f', '\0a', true],
  ['f', 'a//', true], ['f', 'a/.', true], ['f', 'zz/..', true], ['f', 'a/b/c.d/e', false], ['f', '~/a', false], ['f', 'a/~', false],
  ['f', '/.', true], ['f', '//', true], ['f', '.', true], ['f', 'a/.../b', false], ['f', 'a/b..', false],
  // A directory's row: one '/' after a plain path; the rest is held to the same rules.
  ['f', 'a/', false], ['f', 'a/b/', false], ['f', '.a/', false], ['f', '../', true], ['f', './', true], ['f', 'a/../', true], ['f', '/a/', true], ['f', 'a\0/', true]
]

describe('unsafe paths (a restore refuses a row that would leave its folder on disk)', () => {
  it('names exactly the rows whose path or folder is not plain', () => {
    const db = new Database(':memory:')
    try {
      db.exec('CREATE TABLE entries (folder TEXT, path TEXT)')
      const insert = db.prepare('INSERT INTO entries VALUES (?, ?)')
      for (const [folder, path, unsafe] of CASES) {
        db.exec('DELETE FROM entries')
        insert.run(folder, path)
        expect([folder, path, db.prepare(`SELECT ${UNSAFE_ROW} FROM entries`).pluck().get() === 1]).toEqual([folder, path, unsafe])
        expect(db.prepare(UNSAFE_PATHS).pluck().get()).toBe(unsafe ? `${folder}/${path}` : undefined)
      }
    } finally {
      db.close()
    }
  })

  it('splits the same answer into the folder and the path, and finds an unsafe folder by seeks down the key', () => {
    const db = new Database(':memory:')
    try {
      db.exec('CREATE TABLE entries (device_id TEXT NOT NULL, folder TEXT NOT NULL, path TEXT NOT NULL, PRIMARY KEY (device_id, folder, path)) STRICT, WITHOUT ROWID')
      const insert = db.prepare('INSERT INTO entries VALUES (?, ?, ?)')
      for (const [folder, path, unsafe] of CASES) {
        db.exec('DELETE FROM entries')
        insert.run('d', folder, path)
        // Safe rows of this device and another around it: only the row in question decides.
        insert.run('d', 'a', 'b')
        insert.run('d', 'zzz', 'b')
        insert.run('c', '..', '/x')
        insert.run('e', '', 'x')
        const split = db.prepare(`SELECT ${UNSAFE_FOLDER} AS folder, ${UNSAFE_PATH} AS path FROM entries WHERE device_id = 'd' AND folder = ? AND path = ?`).get(folder, path) as { folder: number, path: number }
        expect([folder, path, split.folder === 1 || split.path === 1]).toEqual([folder, path, unsafe])
        const folders = db.prepare(UNSAFE_FOLDERS).pluck().get({ device: 'd' }) === 1
        expect([folder, path, folders]).toEqual([folder, path, split.folder === 1])
      }
    } finally {
      db.close()
    }
  })
})
