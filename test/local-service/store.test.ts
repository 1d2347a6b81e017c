import { describe, expect, it, onTestFinished } from 'vitest'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { useTempDir } from '../helpers/temp-dir.js'
import { openServiceDatabase } from '../../src/local-service/store.js'

const STORE = fileURLToPath(new URL('../../dist/local-service/store.js', import.meta.url))

async function openInProcess (dir: string): Promise<{ code: number | null, stderr: string }> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', `const { openServiceDatabase } = await import(${JSON.stringify(STORE)}); (await openServiceDatabase(${JSON.stringify(dir)})).close()`], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
  const code = await new Promise<number | null>(resolve => child.on('close', resolve))
  return { code, stderr }
}

describe('the local service\'s database', () => {
  it('makes each commit durable before it returns (synchronous = FULL: a pointer or a block answered as stored is not taken back by a power cut)', async () => {
    const db = await openServiceDatabase(await useTempDir())
    onTestFinished(() => { db.close() })
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal')
    // 2 is FULL; NORMAL (1) syncs the WAL only at checkpoints, so the last commits may be lost.
    expect(db.pragma('synchronous', { simple: true })).toBe(2)
  })

  it('opens in several processes at once on a fresh directory, each migrating it or waiting for the other', async () => {
    const root = await useTempDir()
    for (let round = 0; round < 4; round++) {
      const dir = join(root, `fresh-${round}`)
      const results = await Promise.all([0, 1, 2, 3].map(async () => await openInProcess(dir)))
      expect(results.map(r => r.stderr.split('\n').find(l => l.includes('Error')) ?? '')).toEqual(['', '', '', ''])
      expect(results.map(r => r.code)).toEqual([0, 0, 0, 0])
    }
  })

  it('waits for a write lock held elsewhere without blocking the event loop (failed before: Atomics.wait held it, so the holder never let go)', async () => {
    const dir = await useTempDir()
    // Another connection holds the fresh file's write lock with a write pending: switching to WAL
    // answers BUSY at once (SQLite's deadlock avoidance), so the open must wait and try again.
    const other = new Database(join(dir, 'service.sqlite'))
    onTestFinished(() => { if (other.open) other.close() })
    other.exec('CREATE TABLE other (x)')
    other.exec('BEGIN IMMEDIATE')
    other.exec('INSERT INTO other VALUES (1)')
    let ticks = 0
    const ticker = setInterval(() => { ticks++ }, 10)
    onTestFinished(() => { clearInterval(ticker) })
    // Let go from the event loop: only an open that yields to it lets this run.
    setTimeout(() => { other.exec('ROLLBACK'); other.close() }, 300)
    const db = await openServiceDatabase(dir)
    onTestFinished(() => { db.close() })
    expect(other.open).toBe(false)
    expect(ticks).toBeGreaterThan(0)
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal')
    expect(db.prepare('SELECT count(*) FROM settings').pluck().get()).toBe(0)
  })
})
