import { describe, it, expect } from 'vitest'
import { closeSync, openSync, writeSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { DaemonProcess } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'
import { writeTestConfig } from '../helpers/config-file.js'

/** Damages the index under the running daemon the way a failing disk would: pages overwritten, then another writer. */
function damage (indexPath: string): void {
  const db = new Database(indexPath)
  db.pragma('wal_checkpoint(TRUNCATE)')
  const pages = db.pragma('page_count', { simple: true }) as number
  db.close()
  const fd = openSync(indexPath, 'r+')
  try {
    const garbage = Buffer.alloc(4096 * (pages - 1), 0xff)
    writeSync(fd, garbage, 0, garbage.length, 4096)
  } finally {
    closeSync(fd)
  }
  // A write from another connection makes the daemon's connection read the pages again.
  const other = new Database(indexPath)
  try { other.exec('CREATE TABLE IF NOT EXISTS damage (a)') } catch {}
  other.close()
}

describe('an index that cannot be written any more', () => {
  it('stops the daemon cleanly with exit 1 and a message that says what to do, not a stack trace', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'), { recursive: true })
    for (let i = 0; i < 300; i++) await writeFile(join(dir, 'notes', `file-${i}-${'n'.repeat(100)}.md`), `content ${i}`)
    const config = await writeTestConfig(dir, { log_level: 'info' })
    const daemon = new DaemonProcess(['--config', config])
    await daemon.logged('watching')
    damage(join(dir, 'state', 'index.sqlite'))
    for (let i = 0; i < 300; i += 7) await writeFile(join(dir, 'notes', `file-${i}-${'n'.repeat(100)}.md`), `changed ${i}`)
    const { code } = await until(() => daemon.ended, 20_000, 'the daemon to stop on its own')
    expect(code).toBe(1)
    expect(daemon.stderr).toContain(`cidsync: the daemon stopped: the index is damaged: the index ${join(dir, 'state', 'index.sqlite')} cannot be written (SQLITE_CORRUPT): the database is damaged`)
    expect(daemon.stderr).toContain('Nothing is lost: once it can be written, start the daemon again and its scan finds every change not written [ERR_INDEX_WRITE_FATAL]')
    expect(daemon.stderr).toContain('[ERR_INDEX_WRITE_FATAL]')
    expect(daemon.stderr).toContain('"msg":"daemon stopped"')
    expect(daemon.stderr).not.toMatch(/^\s+at /m)
  })
})
