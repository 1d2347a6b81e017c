import { describe, expect, it } from 'vitest'
import Database from 'better-sqlite3'
import { mkdir, readdir, stat, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

async function cli (args: string[]): Promise<{ code: number | null, stdout: string, stderr: string }> {
  return await runCli(args, { timeoutMs: 120_000 })
}

// A name that, printed raw, sets the terminal's title and clears the screen.
const EVIL = 'a\u001b]0;pwned\u0007\u001b[2Jb.txt'

describe('get and snapshot output: names shown safely, a --to dir made private', () => {
  it('snapshot names a file it did not store, and get one it kept, without a raw escape', async () => {
    const dir = await useTempDir()
    const notes = join(dir, 'notes')
    await mkdir(notes)
    await writeFile(join(notes, EVIL), 'x'.repeat(100))
    await writeFile(join(notes, 'small.txt'), 'ok')
    const config = (name: string, folder: string, extra: string): string =>
      `state_dir = "${name}-state"\nnamespace = "content"\n[[folders]]\nname = "notes"\npath = "${folder}"\nstore = true\n` +
      `[service]\ndir = "${join(dir, 'service')}"\n[snapshot]\ndeal = false\n[status]\nlisten = "127.0.0.1:0"\n${extra}`
    const a = join(dir, 'a.toml')
    await writeFile(a, config('a', notes, '[content]\nmax_file_size = 50\n'))
    const tooLarge = await cli(['snapshot', '--config', a])
    expect(tooLarge.code).not.toBe(0)
    expect(tooLarge.stderr).toContain('not stored: notes/a\\x1b]0;pwned\\x07\\x1b[2Jb.txt')
    expect(tooLarge.stderr).not.toContain('\u001b')

    await writeFile(a, config('a', notes, ''))
    expect((await cli(['snapshot', '--config', a])).code).toBe(0)
    // The same name, holding other bytes, where get would write: kept and named.
    const to = join(dir, 'back')
    await mkdir(join(to, 'notes'), { recursive: true })
    await writeFile(join(to, 'notes', EVIL), 'mine')
    const kept = await cli(['get', `notes/${EVIL}`, '--to', to, '--config', a])
    expect(kept.code).toBe(1)
    expect(kept.stderr).toContain('notes/a\\x1b]0;pwned\\x07\\x1b[2Jb.txt')
    expect(kept.stderr).not.toContain('\u001b')

    // A --to dir made by get is private: the files' own modes are not kept, a private one comes back 0644.
    const fresh = join(dir, 'fresh', 'deeper')
    const got = await cli(['get', 'notes/small.txt', '--to', fresh, '--config', a])
    expect(got.code, got.stderr).toBe(0)
    expect((await stat(fresh)).mode & 0o777).toBe(0o700)
    expect((await stat(join(dir, 'fresh'))).mode & 0o777).toBe(0o700)
  })

  it('writes nothing outside the target: a symlinked directory on the way, a row naming ../', async () => {
    const dir = await useTempDir()
    const notes = join(dir, 'notes')
    await mkdir(join(notes, 'sub'), { recursive: true })
    await writeFile(join(notes, 'sub', 'f.txt'), 'the content\n')
    const a = join(dir, 'a.toml')
    await writeFile(a, `state_dir = "a-state"\nnamespace = "content"\n[[folders]]\nname = "notes"\npath = "${notes}"\nstore = true\n` +
      `[service]\ndir = "${join(dir, 'service')}"\n[snapshot]\ndeal = false\n[status]\nlisten = "127.0.0.1:0"\n`)
    expect((await cli(['snapshot', '--config', a])).code).toBe(0)
    const to = join(dir, 'back')
    const elsewhere = join(dir, 'elsewhere')
    await mkdir(join(to, 'notes'), { recursive: true })
    await mkdir(elsewhere)
    await symlink(elsewhere, join(to, 'notes', 'sub'))
    const through = await cli(['get', 'notes/sub/f.txt', '--to', to, '--config', a])
    // A local layout to fix, not damaged content: exit 1, its own code.
    expect(through.code).toBe(1)
    expect(through.stderr).toContain('is a symlink: nothing is written through it')
    expect(through.stderr).toContain('ERR_TARGET_PATH')
    expect(await readdir(elsewhere)).toEqual([])

    // A row naming ../ (as a forged index would), with stored content behind its CID.
    const db = new Database(join(dir, 'a-state', 'index.sqlite'))
    try {
      const row = db.prepare("SELECT * FROM entries WHERE path = 'sub/f.txt'").get() as Record<string, unknown>
      db.prepare('INSERT INTO entries (device_id, folder, path, size, mtime_ms, cid, cid_profile, updated_at, deleted, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?)').run(row.device_id, 'notes', '../../escape.txt', row.size, row.mtime_ms, row.cid, row.cid_profile, row.updated_at, row.seq)
    } finally {
      db.close()
    }
    const climbing = await cli(['get', 'notes/../../escape.txt', '--to', join(to, 'x'), '--config', a])
    expect(climbing.code).toBe(4)
    expect(climbing.stderr).toContain('not a path inside a folder, refused')
    expect((await readdir(dir)).filter(n => n.includes('escape'))).toEqual([])
    expect((await readdir(to)).filter(n => n.includes('escape'))).toEqual([])
  })
})
