import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { mkdir, readFile, readdir, stat, writeFile, utimes } from 'node:fs/promises'
import { join } from 'node:path'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { flipStoredBlock, storedBlocks } from '../helpers/service-blocks.js'

/** Two devices on one embedded service dir (a shared folder), the second with the first's key. */
async function twoDevices (dir: string): Promise<{ a: string, b: string, notes: string }> {
  const notes = join(dir, 'notes')
  await mkdir(join(notes, 'sub'), { recursive: true })
  const service = join(dir, 'service')
  const config = (name: string, folder: string): string =>
    `state_dir = "${name}-state"\nnamespace = "content"\n[[folders]]\nname = "notes"\npath = "${folder}"\nstore = true\n` +
    `[service]\ndir = "${service}"\n[snapshot]\ndeal = false\n[status]\nlisten = "127.0.0.1:0"\n`
  const a = join(dir, 'a.toml')
  const b = join(dir, 'b.toml')
  await writeFile(a, config('a', notes))
  await mkdir(join(dir, 'b-notes'))
  await writeFile(b, config('b', join(dir, 'b-notes')))
  return { a, b, notes }
}

async function cli (args: string[]): Promise<{ code: number | null, stdout: string, stderr: string }> {
  return await runCli(args, { timeoutMs: 120_000 })
}

describe('cidsync get and restore --files: content back on another device', () => {
  it('stores on snapshot, and a second device brings every byte back, verified; a second run skips what is right; --at brings the older bytes', async () => {
    const dir = await useTempDir()
    const { a, b, notes } = await twoDevices(dir)
    const files = new Map<string, Buffer>([
      ['a.md', Buffer.from('first version\n')],
      ['empty', Buffer.alloc(0)],
      ['sub/big.bin', randomBytes(3 * 1024 * 1024 + 17)],
      ...Array.from({ length: 40 }, (_, i) => [`sub/small-${i}.txt`, randomBytes(100 + i * 50)] as [string, Buffer])
    ])
    for (const [path, bytes] of files) await writeFile(join(notes, path), bytes)
    await utimes(join(notes, 'a.md'), new Date(), new Date('2021-05-06T07:08:09Z'))
    const first = await cli(['snapshot', '--config', a])
    expect(first.stderr).toContain(`stored ${files.size} files`)
    expect(first.code, first.stderr).toBe(0)
    const firstAt = new Date().toISOString()
    await new Promise(resolve => setTimeout(resolve, 1100))
    await writeFile(join(notes, 'a.md'), 'second version, longer\n')
    const second = await cli(['snapshot', '--config', a])
    expect(second.code, second.stderr).toBe(0)
    expect(second.stderr).toContain('stored 1 file')

    const key = await cli(['key', 'export', '--config', a])
    expect((await cli(['key', 'import', key.stdout.trim(), '--config', b])).code).toBe(0)
    expect((await cli(['restore', '--config', b])).code).toBe(0)
    const to = join(dir, 'back')
    const all = await cli(['restore', '--files', '--to', to, '--config', b])
    expect(all.code, all.stderr).toBe(0)
    expect(all.stdout).toContain(`${files.size} files written`)
    for (const [path, bytes] of files) {
      if (path === 'a.md') continue
      expect((await readFile(join(to, 'notes', path))).equals(bytes), path).toBe(true)
    }
    expect(await readFile(join(to, 'notes', 'a.md'), 'utf8')).toBe('second version, longer\n')
    expect((await readdir(join(to, 'notes', 'sub'))).filter(n => n.includes('.part'))).toEqual([])

    const again = await cli(['restore', '--files', 'notes/sub', '--to', to, '--config', b])
    expect(again.code, again.stderr).toBe(0)
    expect(again.stdout).toContain('0 files written, 41 already right')

    const old = await cli(['get', 'notes/a.md', '--at', firstAt, '--to', join(dir, 'old'), '--config', b])
    expect(old.code, old.stderr).toBe(0)
    expect(await readFile(join(dir, 'old', 'notes', 'a.md'), 'utf8')).toBe('first version\n')
    expect((await stat(join(dir, 'old', 'notes', 'a.md'))).mtime.toISOString()).toBe('2021-05-06T07:08:09.000Z')

    // A different local file is kept unless told; into the folder's own path by default.
    await writeFile(join(dir, 'b-notes', 'a.md'), 'mine')
    const kept = await cli(['get', 'notes/a.md', '--config', b])
    expect(kept.code).toBe(1)
    expect(kept.stderr).toContain('add --overwrite to replace it')
    expect(await readFile(join(dir, 'b-notes', 'a.md'), 'utf8')).toBe('mine')
    const replaced = await cli(['get', 'notes/a.md', '--overwrite', '--config', b])
    expect(replaced.code, replaced.stderr).toBe(0)
    expect(await readFile(join(dir, 'b-notes', 'a.md'), 'utf8')).toBe('second version, longer\n')

    const missing = await cli(['get', 'notes/nosuch', '--config', b])
    expect(missing.code).toBe(3)
    expect(missing.stderr).toContain('[ERR_PATH_NOT_FOUND]')
  })

  it('refuses bit-flipped stored content (exit 4, named, nothing written)', async () => {
    const dir = await useTempDir()
    const { a, notes } = await twoDevices(dir)
    await writeFile(join(notes, 'secret.txt'), 'the content that will be damaged on the service\n')
    expect((await cli(['snapshot', '--config', a])).code).toBe(0)
    // Every stored block of the service, flipped: whatever holds the file's pack is damaged.
    const service = join(dir, 'service')
    for (const cid of storedBlocks(service)) flipStoredBlock(service, cid, 'last')
    const to = join(dir, 'back')
    const refused = await cli(['get', 'notes/secret.txt', '--to', to, '--config', a])
    expect(refused.code, refused.stderr).toBe(4)
    expect(refused.stderr).toContain('notes/secret.txt')
    expect(await readdir(join(to, 'notes')).catch(() => [])).toEqual([])
  })
})
