import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { copyFile, mkdir, rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { runCli } from '../../helpers/cli.js'
import { useTempDir } from '../../helpers/temp-dir.js'

const cli = async (args: string[]): Promise<{ code: number | null, stdout: string, stderr: string }> => await runCli(args, { timeoutMs: 120_000 })

// The drill walks one row a content (its CID); a restore checks every path's own row against the
// record. A published row of the same CID with another size (as a device holding the key can
// publish) fails its restore: the drill checks each size and profile of a content's rows too.
describe('verify and a forged row sharing a CID with a good one (sync/verify/stored-content.ts)', () => {
  it('is not restorable where restore --files fails for a path, with --content or a sample', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'kept'))
    await mkdir(join(dir, 'other'))
    const config = join(dir, 'config.toml')
    await writeConfig(dir, config, 'dup', ['kept', 'other'])
    const bytes = randomBytes(3000)
    await writeFile(join(dir, 'kept', 'f.txt'), bytes)
    await writeFile(join(dir, 'other', 'copy.txt'), bytes)
    for (let i = 0; i < 5; i++) await writeFile(join(dir, 'kept', `g-${i}.txt`), randomBytes(500 + i))
    const stored = await cli(['snapshot', '--config', config])
    expect(stored.code, stored.stderr).toBe(0)

    // The row of other/copy.txt says one byte more than its content's record (what another device's
    // forged row would look like in the index a drill rebuilds).
    await forgeAndPublish(dir, config, ["UPDATE entries SET size = size + 1, seq = @seq WHERE folder = 'other' AND path = 'copy.txt'"], ['other'])

    const restored = await cli(['restore', '--files', '--to', join(dir, 'out'), '--config', config])
    // The restore does not bring other/copy.txt back.
    expect(restored.code).toBe(4)
    expect(restored.stderr).toContain('other/copy.txt')

    for (const message of await drillFailures(config)) {
      expect(message).toContain('other/copy.txt')
      expect(message).toContain('forged')
    }
  }, 240_000)

  it('finds a forged row past a thousand honest rows of another profile (a small file hashes alike under two)', async () => {
    const dir = await useTempDir()
    for (const folder of ['a', 'b', 'zz']) await mkdir(join(dir, folder))
    const config = join(dir, 'config.toml')
    await writeConfig(dir, config, 'variants', ['a', 'b', 'zz'])
    const N = 501 // 1,002 groups: two profiles of 501 contents
    for (let i = 0; i < N; i++) {
      const name = `f-${String(i).padStart(3, '0')}`
      await writeFile(join(dir, 'a', name), randomBytes(1000))
      await copyFile(join(dir, 'a', name), join(dir, 'b', name))
    }
    await copyFile(join(dir, 'a', 'f-000'), join(dir, 'zz', 'copy'))
    const stored = await cli(['snapshot', '--config', config])
    expect(stored.code, stored.stderr).toBe(0)

    // Folder b as a device of cid_profile = "unixfs-v1-2025" indexes it (the same CIDs: honest, and
    // each restores); zz/copy one byte longer than its content's record (forged).
    await forgeAndPublish(dir, config, ["UPDATE entries SET cid_profile = 'unixfs-v1-2025', seq = @seq WHERE folder = 'b'", "UPDATE entries SET size = size + 1, seq = @seq WHERE folder = 'zz' AND path = 'copy'"], ['b', 'zz'])

    const restored = await cli(['restore', '--files', '--to', join(dir, 'out'), '--config', config])
    expect(restored.code).toBe(4)
    expect(restored.stderr).toContain('zz/copy')
    // Only zz/copy fails: b's rows of the other profile all come back.
    expect(restored.stderr).toContain('1 file was not brought back')

    for (const message of await drillFailures(config)) expect(message).toContain('zz/copy')
  }, 600_000)
})

async function writeConfig (dir: string, config: string, namespace: string, folders: readonly string[]): Promise<void> {
  await writeFile(config, `state_dir = "state"\nnamespace = "${namespace}"\n` +
    folders.map(f => `[[folders]]\nname = "${f}"\npath = "${f}"\nstore = true\n`).join('') +
    `[service]\ndir = "${join(dir, 'service')}"\n[snapshot]\ndeal = false\n[status]\nlisten = "127.0.0.1:0"\n`)
}

/**
 * Runs `updates` on the index at the device's next sequence number (`@seq`), so the next publish
 * carries them, then moves `away` aside: the publish keeps their rows as indexed.
 */
async function forgeAndPublish (dir: string, config: string, updates: readonly string[], away: readonly string[]): Promise<void> {
  const db = new Database(join(dir, 'state', 'index.sqlite'))
  try {
    const device = db.prepare('SELECT device_id AS id, last_seq AS seq FROM devices').get() as { id: string, seq: number }
    for (const sql of updates) db.prepare(sql).run({ seq: device.seq + 1 })
    db.prepare('UPDATE devices SET last_seq = ? WHERE device_id = ?').run(device.seq + 1, device.id)
  } finally {
    db.close()
  }
  for (const folder of away) await rename(join(dir, folder), join(dir, `${folder}-away`))
  const published = await cli(['snapshot', '--config', config])
  expect(published.stderr).toContain('ERR_FOLDERS_NOT_INDEXED')
}

/** `verify --content` and the sample, each as JSON: both not restorable (exit 4); answers their failures' messages. */
async function drillFailures (config: string): Promise<string[]> {
  const messages: string[] = []
  for (const args of [['--content'], []]) {
    const drill = await cli(['verify', ...args, '--json', '--config', config])
    const result = JSON.parse(drill.stdout) as { restorable: boolean, failed: { message: string } | null }
    expect({ code: drill.code, restorable: result.restorable }, args.join(' ')).toEqual({ code: 4, restorable: false })
    messages.push(result.failed?.message ?? '')
  }
  return messages
}
