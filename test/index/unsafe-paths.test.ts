import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { UNSAFE_PATHS, UNSAFE_ROW } from '../../src/index/unsafe-paths.js'

// Every row shape the walker never writes, and look-alikes it does write (`a..b`, `.hidden`).
const CASES: Array<[folder: string, path: string, unsafe: boolean]> = [
  ['f', '', true], ['f', '/a', true], ['f', 'a/', true], ['f', 'a//b', true], ['f', 'a\0b', true],
  ['f', '.', true], ['f', '..', true], ['f', './a', true], ['f', '../a', true], ['f', 'a/.', true], ['f', 'a/..', true],
  ['f', 'a/./b', true], ['f', 'a/../b', true], ['f', '/', true],
  ['', 'a', true], ['.', 'a', true], ['..', 'a', true], ['a/b', 'c', true], ['a\0', 'c', true],
  ['f', 'a/b.c', false], ['f', '.a', false], ['f', 'a..b', false], ['f', 'a/.b/c', false], ['f', '...', false], ['f', 'a/..b', false],
  ['f', 'b../c', false], ['f', 'é/ü.txt', false], ['.f', 'a', false],
  // A component starting with '.' (a hidden file) is searched further; one without is answered before.
  ['f', '.a/../b', true], ['f', 'a/.b/.', true], ['f', '.git/config', false], ['f', 'a/.b/..c/d.', false], ['f', '.a/\0', true], ['.', '.a', true]
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
})
