import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { mkdir, readFile, readdir, rm, stat, symlink, writeFile, utimes } from 'node:fs/promises'
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

async function cli (args: string[], env?: NodeJS.ProcessEnv): Promise<{ code: number | null, stdout: string, stderr: string }> {
  return await runCli(args, { timeoutMs: 120_000, ...(env === undefined ? {} : { env: { ...process.env, ...env } }) })
}

/** A pasted command's words: bare, or single-quoted as `shellWord` quotes them. */
function shellArgs (command: string): string[] {
  return [...command.matchAll(/(?:'((?:[^']|'\\'')*)'|(\S+))(?:\s|$)/g)].map(m => m[1] !== undefined ? m[1].replaceAll("'\\''", "'") : m[2] as string)
}

/** Two publishes an hour apart on the test clock (`CIDSYNC_TEST_CLOCK`), instead of a wait between them. */
const FIRST = '2026-01-01T08:00:00.000Z'
const SECOND = '2026-01-01T09:00:00.000Z'

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
    const first = await cli(['snapshot', '--config', a], { CIDSYNC_TEST_CLOCK: FIRST })
    expect(first.stderr).toContain(`stored ${files.size} files`)
    expect(first.code, first.stderr).toBe(0)
    const firstAt = new Date(Date.parse(FIRST) + 30 * 60_000).toISOString()
    await writeFile(join(notes, 'a.md'), 'second version, longer\n')
    const second = await cli(['snapshot', '--config', a], { CIDSYNC_TEST_CLOCK: SECOND })
    expect(second.code, second.stderr).toBe(0)
    expect(second.stderr).toContain('stored 1 file')

    const key = await cli(['key', 'export', '--config', a])
    expect((await cli(['key', 'import', key.stdout.trim(), '--config', b])).code).toBe(0)
    const restored = await cli(['restore', '--config', b])
    expect(restored.code, restored.stderr).toBe(0)
    expect(restored.stdout).toContain(`it lists ${files.size} files, not their bytes; ${files.size} of them have their content stored: \`cidsync restore --files --config ${b} [--to DIR]\` brings them back`)
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

    const folder = await cli(['get', 'notes/sub/', '--to', to, '--config', b])
    expect(folder.code).toBe(3)
    expect(folder.stderr).toContain(`"notes/sub" is a directory (41 files under it): \`cidsync get\` takes files; \`cidsync restore --files notes/sub --to ${to} --config ${b}\` brings back everything under it`)

    const missing = await cli(['get', 'notes/nosuch', '--config', b])
    expect(missing.code).toBe(3)
    expect(missing.stderr).toContain('[ERR_PATH_NOT_FOUND]')
  })

  it('a deleted file: says so and how to bring its last version back, which then works', async () => {
    const dir = await useTempDir()
    const { a, notes } = await twoDevices(dir)
    await writeFile(join(notes, 'gone it is.txt'), 'deleted by mistake\n')
    expect((await cli(['snapshot', '--config', a])).code).toBe(0)
    await rm(join(notes, 'gone it is.txt'))
    const after = await cli(['snapshot', '--config', a])
    expect(after.code, after.stderr).toBe(0)
    const to = join(dir, 'back')
    const asked = await cli(['get', 'notes/gone it is.txt', '--to', to, '--config', a])
    expect(asked.code).toBe(3)
    expect(asked.stderr).toContain('"notes/gone it is.txt" was deleted')
    // The hint repeats where this run writes: pasted as shown, it must not write into the folder.
    const hint = /`cidsync (get '(notes\/gone it is\.txt)' --at \S+ --to \S+ --config \S+)`/.exec(asked.stderr)
    // Its `log` too, which writes nothing: the config, no --to.
    expect(asked.stderr).toContain(`\`cidsync log 'notes/gone it is.txt' --config ${a}\` lists every version`)
    expect(hint, asked.stderr).not.toBeNull()
    const back = await cli(shellArgs(hint?.[1] as string))
    expect(back.code, back.stderr).toBe(0)
    expect(await readFile(join(to, 'notes', 'gone it is.txt'), 'utf8')).toBe('deleted by mistake\n')
    await expect(stat(join(notes, 'gone it is.txt'))).rejects.toMatchObject({ code: 'ENOENT' })
  })

  it('a file excluded from storing: not brought back, exit 1, saying why it may not be stored', async () => {
    const dir = await useTempDir()
    const { a, notes } = await twoDevices(dir)
    await writeFile(a, `${await readFile(a, 'utf8')}[content]\nexclude = ["*.skip"]\n`)
    await writeFile(join(notes, 'kept.txt'), 'stored')
    await writeFile(join(notes, 'left.skip'), 'indexed only')
    await writeFile(join(notes, 'evil\u001b]0;owned\u0007.skip'), 'a name that sets the window title')
    expect((await cli(['snapshot', '--config', a])).code).toBe(0)
    const got = await cli(['restore', '--files', '--to', join(dir, 'back'), '--config', a])
    expect(got.code).toBe(1)
    expect(got.stdout).toContain('1 file written, 0 already right; not brought back: 2 not stored')
    expect(got.stderr).toContain('cidsync: notes/evil\\x1b]0;owned\\x07.skip: its content was never stored')
    expect(got.stderr).not.toMatch(/[\u0007\u001b]/)
    expect(got.stderr).toContain('notes/left.skip: its content was never stored: on the device that has it, its folder needs `store = true`, and the file must not be in `[content] exclude`')
    expect(await readFile(join(dir, 'back', 'notes', 'kept.txt'), 'utf8')).toBe('stored')
    // Into the folder itself, where each is as indexed: right as it is, exit 0, every run.
    for (const run of [1, 2]) {
      const inPlace = await cli(['restore', '--files', '--config', a])
      expect(inPlace.code, `run ${run}: ${inPlace.stderr}`).toBe(0)
      expect(inPlace.stdout).toContain('0 files written, 3 already right')
    }
    expect((await cli(['restore', '--files', '--dry-run', '--config', a])).stdout).toContain('0 not stored')
    // Changed since it was indexed: not stored, and said, as before.
    await writeFile(join(notes, 'left.skip'), 'changed, and never stored')
    const changed = await cli(['restore', '--files', '--config', a])
    expect(changed.code).toBe(1)
    expect(changed.stderr).toContain('notes/left.skip: its content was never stored')
    expect(await readFile(join(notes, 'left.skip'), 'utf8')).toBe('changed, and never stored')
  })

  it('a device whose folders are named otherwise: said once, before anything is fetched (exit 2), not once per file', async () => {
    const dir = await useTempDir()
    const { a, b, notes } = await twoDevices(dir)
    await writeFile(b, (await readFile(b, 'utf8')).replace('name = "notes"', 'name = "docs"'))
    for (const name of ['one.txt', 'two.txt', 'three.txt']) await writeFile(join(notes, name), name)
    expect((await cli(['snapshot', '--config', a])).code).toBe(0)
    expect((await cli(['key', 'import', (await cli(['key', 'export', '--config', a])).stdout.trim(), '--config', b])).code).toBe(0)
    expect((await cli(['restore', '--config', b])).code).toBe(0)
    const refused = await cli(['restore', '--files', '--config', b])
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain('3 files and 1 directory or symlink are in a folder this device\'s config does not have ("notes"; it has "docs"): bring them back with --to DIR')
    expect(refused.stderr.trim().split('\n')).toHaveLength(1)
    expect(await readdir(join(dir, 'b-notes'))).toEqual([])
  })

  it('many files not stored: the first 20 named with why, the rest counted; --json gives each one its why', async () => {
    const dir = await useTempDir()
    const { a, notes } = await twoDevices(dir)
    await writeFile(a, (await readFile(a, 'utf8')).replace('store = true', 'store = false'))
    for (let i = 0; i < 25; i++) await writeFile(join(notes, `f${String(i).padStart(2, '0')}.txt`), `file ${i}`)
    expect((await cli(['snapshot', '--config', a])).code).toBe(0)
    const plain = await cli(['restore', '--files', '--to', join(dir, 'back'), '--config', a])
    expect(plain.code).toBe(1)
    const lines = plain.stderr.trim().split('\n')
    expect(lines).toHaveLength(22)
    expect(lines[20]).toBe('cidsync: ... and 5 more not brought back (`--json` lists each with why)')
    const json = await cli(['restore', '--files', '--to', join(dir, 'back'), '--json', '--config', a])
    expect(json.code).toBe(1)
    const files = json.stdout.trim().split('\n').map(l => JSON.parse(l) as { type: string, outcome?: string, reason?: string, code?: string }).filter(e => e.type === 'file')
    expect(files).toHaveLength(25)
    for (const f of files) expect(f).toMatchObject({ outcome: 'not-stored', code: 'ERR_CONTENT_NOT_STORED', reason: expect.stringContaining('its content was never stored') })
    expect(json.stderr).toContain('each in its JSON line, with why')
  })

  it('refuses bit-flipped stored content (exit 4, named, nothing written)', async () => {
    const dir = await useTempDir()
    const { a, b, notes } = await twoDevices(dir)
    await writeFile(join(notes, 'secret.txt'), 'the content that will be damaged on the service\n')
    expect((await cli(['snapshot', '--config', a])).code).toBe(0)
    expect((await cli(['key', 'import', (await cli(['key', 'export', '--config', a])).stdout.trim(), '--config', b])).code).toBe(0)
    const restored = await cli(['restore', '--config', b])
    expect(restored.stdout).toContain(`it lists 1 file, not its bytes; 1 of them has its content stored: \`cidsync restore --files --config ${b} [--to DIR]\` brings it back`)
    // Every stored block of the service, flipped: whatever holds the file's pack is damaged.
    const service = join(dir, 'service')
    for (const cid of storedBlocks(service)) flipStoredBlock(service, cid, 'last')
    const to = join(dir, 'back')
    const refused = await cli(['get', 'notes/secret.txt', '--to', to, '--config', a])
    expect(refused.code, refused.stderr).toBe(4)
    expect(refused.stderr).toContain('notes/secret.txt')
    expect(await readdir(join(to, 'notes')).catch(() => [])).toEqual([])
  })

  it('refuses a large file whose stored blocks are damaged, as they stream from the embedded store (exit 4, named, no temp left)', async () => {
    const dir = await useTempDir()
    const { a, notes } = await twoDevices(dir)
    const big = randomBytes(3 * 1024 * 1024 + 5)
    await writeFile(join(notes, 'big.bin'), big)
    expect((await cli(['snapshot', '--config', a])).code).toBe(0)
    // Every raw leaf flipped, the DAG nodes above them left whole: the file's part is opened as
    // it streams, and the first damaged chunk's tag ends it midway (sealed reads hash no leaf).
    const service = join(dir, 'service')
    for (const cid of storedBlocks(service).filter(c => c.startsWith('bafk'))) flipStoredBlock(service, cid)
    const to = join(dir, 'back')
    const refused = await cli(['get', 'notes/big.bin', '--to', to, '--config', a])
    expect(refused.code, refused.stderr).toBe(4)
    expect(refused.stderr).toContain('notes/big.bin')
    expect(refused.stderr).toContain('damaged or forged')
    expect(await readdir(join(to, 'notes')).catch(() => [])).toEqual([])
  })

  it('a new device whose folder is not made yet: said once, how to make it (mkdir -p), besides mounting it or --to', async () => {
    const dir = await useTempDir()
    const { a, b, notes } = await twoDevices(dir)
    await writeFile(join(notes, 'a.md'), 'hello\n')
    // A symlink and a directory say the same as a file, not a raw ENOENT.
    await mkdir(join(notes, 'deeper'))
    await symlink('a.md', join(notes, 'link.md'))
    expect((await cli(['snapshot', '--config', a])).code).toBe(0)
    const key = await cli(['key', 'export', '--config', a])
    expect((await cli(['key', 'import', key.stdout.trim(), '--config', b])).code).toBe(0)
    expect((await cli(['restore', '--config', b])).code).toBe(0)
    await rm(join(dir, 'b-notes'), { recursive: true })
    const missing = await cli(['restore', '--files', '--config', b])
    // Said once, before anything (exit 2): not once per file, symlink and directory.
    expect(missing.code).toBe(2)
    expect(missing.stderr).toContain(`the folder "notes" at ${join(dir, 'b-notes')} is not there (an unmounted disk?): nothing was brought back. Mount it; on a new device, create it (mkdir -p); or bring the files back with --to DIR`)
    expect(missing.stderr.trim().split('\n')).toHaveLength(1)
    expect(missing.stderr).not.toContain('ENOENT')
    // The dry run says the same.
    const planned = await cli(['restore', '--files', '--dry-run', '--config', b])
    expect([planned.code, planned.stderr.trim()]).toEqual([2, missing.stderr.trim()])
    await mkdir(join(dir, 'b-notes'))
    expect((await cli(['restore', '--files', '--config', b])).code).toBe(0)
    expect(await readFile(join(dir, 'b-notes', 'a.md'), 'utf8')).toBe('hello\n')
  })
})
