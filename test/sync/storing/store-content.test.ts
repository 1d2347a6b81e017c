import { describe, expect, it } from 'vitest'
import Database from 'better-sqlite3'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { runCli } from '../../helpers/cli.js'
import { useTempDir } from '../../helpers/temp-dir.js'

async function cli (args: string[]): Promise<{ code: number | null, stdout: string, stderr: string }> {
  return await runCli(args, { timeoutMs: 120_000 })
}

describe('storing content reads nothing outside its folder', () => {
  it('refuses a row of this device naming ../ (a forged restored index) instead of uploading the file it points at', async () => {
    const dir = await useTempDir()
    const notes = join(dir, 'notes')
    await mkdir(notes)
    await writeFile(join(notes, 'a.txt'), 'inside\n')
    const outside = join(dir, 'outside.txt')
    await writeFile(outside, 'a private file beside the folder, never to be sent\n')
    const config = join(dir, 'a.toml')
    await writeFile(config, `state_dir = "a-state"\nnamespace = "content"\n[[folders]]\nname = "notes"\npath = "${notes}"\nstore = true\n` +
      `[service]\ndir = "${join(dir, 'service')}"\n[content]\nencryption = "none"\n[snapshot]\ndeal = false\n[status]\nlisten = "127.0.0.1:0"\n`)
    expect((await cli(['snapshot', '--config', config])).code).toBe(0)
    const cid = (await cli(['cid', outside])).stdout.trim().split(/\s+/)[0] as string
    // What a restore of a forged index leaves: a live row of this device whose path climbs out.
    const db = new Database(join(dir, 'a-state', 'index.sqlite'))
    try {
      const row = db.prepare('SELECT device_id, cid_profile FROM entries LIMIT 1').get() as { device_id: string, cid_profile: string }
      const seq = (db.prepare('SELECT last_seq FROM devices WHERE device_id = ?').pluck().get(row.device_id) as number) + 1
      db.prepare('INSERT INTO entries (device_id, folder, path, size, mtime_ms, cid, cid_profile, updated_at, deleted, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?)').run(row.device_id, 'notes', '../outside.txt', 52, Date.now(), cid, row.cid_profile, Date.now(), seq)
      db.prepare('UPDATE devices SET last_seq = ? WHERE device_id = ?').run(seq, row.device_id)
    } finally {
      db.close()
    }
    const second = await cli(['snapshot', '--config', config])
    expect(second.stderr).toContain('../outside.txt')
    expect(second.stderr).toContain('not a path inside a folder')
    expect(second.code).not.toBe(0)
    expect(second.stderr).not.toContain('stored 1 file')
    const db2 = new Database(join(dir, 'a-state', 'index.sqlite'), { readonly: true })
    try {
      expect(db2.prepare('SELECT COUNT(*) FROM content WHERE cid = ?').pluck().get(cid)).toBe(0)
    } finally {
      db2.close()
    }
  })
})
