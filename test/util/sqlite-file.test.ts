import { describe, expect, it } from 'vitest'
import { spawn } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { journalOff, openSqliteFile } from '../../src/util/sqlite-file.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { bound } from '../helpers/wait.js'

const OPENER = fileURLToPath(new URL('../../dist/util/sqlite-file.js', import.meta.url))

const errors = {
  damaged: (path: string, message: string) => new Error(`damaged ${path}: ${message}`),
  tooNew: (path: string, found: number, known: number) => new Error(`too new ${path}: ${found} > ${known}`)
}

// A process that opens the file with two steps, the second slow and counted, once told to go.
const MIGRATING = `
const { openSqliteFile } = await import(process.argv[1])
const go = Date.now() + Number(process.argv[3])
while (Date.now() < go) {}
const db = openSqliteFile(process.argv[2], {
  damaged: (p, m) => new Error(m), tooNew: (p) => new Error('too new'),
  migrations: [
    (db) => db.exec('CREATE TABLE runs (n INTEGER)'),
    (db) => { const until = Date.now() + 400; while (Date.now() < until) {} db.exec('INSERT INTO runs VALUES (1); CREATE TABLE second (x)') }
  ]
})
db.close()
`

async function migrate (path: string, startInMs: number): Promise<{ code: number | null, stderr: string }> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', MIGRATING, OPENER, path, String(startInMs)], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
  const timer = setTimeout(() => child.kill('SIGKILL'), bound(60_000))
  const code = await new Promise<number | null>(resolve => child.on('close', resolve))
  clearTimeout(timer)
  return { code, stderr }
}

describe('opening a SQLite file', () => {
  it('applies each migration once when two processes open an old file at the same moment', async () => {
    const dir = await useTempDir()
    const path = join(dir, 'two.sqlite')
    openSqliteFile(path, { ...errors, migrations: [(db) => db.exec('CREATE TABLE runs (n INTEGER)')] }).close()
    const [a, b] = await Promise.all([migrate(path, 300), migrate(path, 300)])
    expect(a, a.stderr).toMatchObject({ code: 0 })
    expect(b, b.stderr).toMatchObject({ code: 0 })
    const db = new Database(path, { readonly: true })
    expect(db.prepare('SELECT COUNT(*) FROM runs').pluck().get()).toBe(1)
    expect(db.pragma('user_version', { simple: true })).toBe(2)
    db.close()
  }, 120_000)

  it('names a file that is not a database, and one from a newer schema, with the caller\'s errors', async () => {
    const dir = await useTempDir()
    await writeFile(join(dir, 'junk.sqlite'), 'not a database at all, just some text that is long enough'.repeat(20))
    expect(() => openSqliteFile(join(dir, 'junk.sqlite'), { ...errors, migrations: [] })).toThrow(/^damaged /)
    const newer = join(dir, 'newer.sqlite')
    openSqliteFile(newer, { ...errors, migrations: [(db) => db.exec('CREATE TABLE a (x)'), (db) => db.exec('CREATE TABLE b (x)')] }).close()
    expect(() => openSqliteFile(newer, { ...errors, migrations: [(db) => db.exec('CREATE TABLE a (x)')] })).toThrow('too new')
  })

  it('turns a scratch file\'s journal off, where SQLite\'s defensive mode ignores the plain pragma, and leaves that mode on', async () => {
    const dir = await useTempDir()
    const db = new Database(join(dir, 'sets.sqlite'))
    try {
      // What better-sqlite3 does with the plain pragma: no error, and the journal stays.
      expect(db.pragma('journal_mode = OFF', { simple: true })).toBe('delete')
      journalOff(db)
      db.exec(`ATTACH DATABASE '${join(dir, 'aside.sqlite')}' AS aside`)
      journalOff(db, 'aside')
      expect(db.pragma('main.journal_mode', { simple: true })).toBe('off')
      expect(db.pragma('aside.journal_mode', { simple: true })).toBe('off')
      // Every page written once, into the files themselves: no journal beside either.
      const journals: string[] = []
      const seen = (): void => { journals.push(...readdirSync(dir).filter(name => name.endsWith('-journal'))) }
      db.exec('CREATE TABLE t (x); CREATE TABLE aside.u (x)')
      db.transaction(() => {
        for (let i = 0; i < 2000; i++) db.prepare('INSERT INTO t VALUES (?)').run(`row ${i}`.repeat(20))
        db.exec('INSERT INTO aside.u SELECT x FROM t')
      })()
      // Looked for inside the transaction: a rollback journal lives only until its commit.
      db.transaction(() => { db.exec('UPDATE t SET x = upper(x); UPDATE aside.u SET x = lower(x)'); seen() })()
      expect(journals).toEqual([])
      // The defensive mode is back: the plain pragma is ignored again for another file.
      db.exec(`ATTACH DATABASE '${join(dir, 'other.sqlite')}' AS other`)
      expect(db.pragma('other.journal_mode = OFF', { simple: true })).toBe('delete')
    } finally {
      db.close()
    }
  })
})
