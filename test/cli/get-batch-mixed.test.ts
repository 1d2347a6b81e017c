import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { chmod, link, lstat, mkdir, readFile, readdir, readlink, stat, symlink, utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

async function cli (args: string[]): Promise<{ code: number | null, stdout: string, stderr: string }> {
  return await runCli(args, { timeoutMs: 120_000 })
}

describe('restore --files: several packs, hard links, symlinks and kept files in the same directories', () => {
  it('lands every file it may, keeps what appeared there, counts each one kept, and --overwrite replaces them', async () => {
    const dir = await useTempDir()
    const notes = join(dir, 'notes')
    const service = join(dir, 'service')
    await mkdir(join(notes, 'x', 'y'), { recursive: true })
    const config = (name: string, folder: string): string =>
      `state_dir = "${name}-state"\nnamespace = "content"\n[[folders]]\nname = "notes"\npath = "${folder}"\nstore = true\n` +
      `[service]\ndir = "${service}"\n[snapshot]\ndeal = false\n[status]\nlisten = "127.0.0.1:0"\n`
    const a = join(dir, 'a.toml')
    const b = join(dir, 'b.toml')
    await writeFile(a, config('a', notes))
    await mkdir(join(dir, 'b-notes'))
    await writeFile(b, config('b', join(dir, 'b-notes')))
    const files = new Map<string, Buffer>()
    // Three snapshots: three packs of small files, read one after another (and ahead).
    for (let round = 0; round < 3; round++) {
      for (const sub of ['', 'x', 'x/y']) {
        for (let i = 0; i < 30; i++) {
          const path = join(sub, `r${round}-${i}.txt`)
          const bytes = randomBytes(200 + ((i * 977 + round * 31) % 9000))
          files.set(path, bytes)
          await writeFile(join(notes, path), bytes)
        }
      }
      if (round === 1) {
        await link(join(notes, 'x', 'r0-3.txt'), join(notes, 'x', 'hard-1'))
        await link(join(notes, 'x', 'r0-3.txt'), join(notes, 'x', 'y', 'hard-2'))
        files.set('x/hard-1', files.get('x/r0-3.txt') as Buffer)
        files.set('x/y/hard-2', files.get('x/r0-3.txt') as Buffer)
        await symlink('r0-1.txt', join(notes, 'x', 'sym'))
        await symlink('../r0-2.txt', join(notes, 'x', 'y', 'sym'))
      }
      const stored = await cli(['snapshot', '--config', a])
      expect(stored.code, stored.stderr).toBe(0)
    }
    const key = await cli(['key', 'export', '--config', a])
    expect((await cli(['key', 'import', key.stdout.trim(), '--config', b])).code).toBe(0)
    expect((await cli(['restore', '--config', b])).code).toBe(0)

    const to = join(dir, 'back')
    const kept = ['r1-4.txt', 'x/r2-7.txt', 'x/y/r0-29.txt']
    for (const path of kept) {
      await mkdir(join(to, 'notes', path, '..'), { recursive: true })
      await writeFile(join(to, 'notes', path), `mine ${path}`)
    }
    const first = await cli(['restore', '--files', '--to', to, '--config', b, '--json'])
    expect(first.code, first.stderr).toBe(1)
    const events = first.stdout.trim().split('\n').map(l => JSON.parse(l) as { type: string, path?: string, outcome?: string, code?: string })
    const outcome = new Map(events.filter(e => e.type === 'file' && e.path !== undefined).map(e => [e.path as string, e]))
    // The start line counts every file line to come, the hard links' other names too.
    expect((events[0] as { type: string, files?: number }).files).toBe(events.filter(e => e.type === 'file').length)
    // The last line counts each outcome.
    const summary = events.at(-1) as unknown as { type: string, files: Record<string, number>, entries: Record<string, number> }
    expect(summary.type).toBe('summary')
    expect(summary.files).toEqual({ written: files.size - kept.length, 'already-there': 0, 'kept-different': kept.length, 'not-stored': 0, failed: 0 })
    expect(summary.entries.failed).toBe(0)
    for (const path of kept) {
      expect(outcome.get(`notes/${path}`)?.outcome, path).toBe('kept-different')
      expect(await readFile(join(to, 'notes', path), 'utf8')).toBe(`mine ${path}`)
    }
    for (const [path, bytes] of files) {
      if (kept.includes(path)) continue
      expect((await readFile(join(to, 'notes', path))).equals(bytes), path).toBe(true)
    }
    expect((await stat(join(to, 'notes', 'x', 'y', 'hard-2'))).ino).toBe((await stat(join(to, 'notes', 'x', 'r0-3.txt'))).ino)
    expect(await readlink(join(to, 'notes', 'x', 'sym'))).toBe('r0-1.txt')
    expect(await readlink(join(to, 'notes', 'x', 'y', 'sym'))).toBe('../r0-2.txt')
    for (const sub of ['', 'x', 'x/y']) expect((await readdir(join(to, 'notes', sub))).filter(n => n.endsWith('.part'))).toEqual([])

    const again = await cli(['restore', '--files', '--to', to, '--overwrite', '--config', b])
    expect(again.code, again.stderr).toBe(0)
    for (const [path, bytes] of files) expect((await readFile(join(to, 'notes', path))).equals(bytes), path).toBe(true)
    expect((await lstat(join(to, 'notes', 'x', 'hard-1'))).ino).toBe((await stat(join(to, 'notes', 'x', 'r0-3.txt'))).ino)

    // A few files of large packs: read by range, each file's own blocks, and just as right.
    const few = join(dir, 'few')
    const picked = ['x/r1-5.txt', 'r2-29.txt', 'x/y/hard-2']
    const got = await cli(['get', ...picked.map(p => `notes/${p}`), '--to', few, '--config', b])
    expect(got.code, got.stderr).toBe(0)
    for (const path of picked) expect((await readFile(join(few, 'notes', path))).equals(files.get(path) as Buffer), path).toBe(true)

    // Right bytes, but an mtime and a mode changed since: given back in place, the file not fetched again.
    const touched = join(to, 'notes', 'x', 'r1-5.txt')
    const right = await stat(touched)
    await utimes(touched, new Date('2001-01-01T00:00:00Z'), new Date('2001-01-01T00:00:00Z'))
    await chmod(touched, 0o600)
    const fixed = await cli(['restore', '--files', '--to', to, '--config', b, '--json'])
    expect(fixed.code, fixed.stderr).toBe(0)
    const said = fixed.stdout.trim().split('\n').map(l => JSON.parse(l) as { type: string, path?: string, outcome?: string })
    expect(said.filter(e => e.type === 'file' && e.outcome === 'written').map(e => e.path)).toEqual(['notes/x/r1-5.txt'])
    const now = await stat(touched)
    expect([now.ino, now.mode, Math.abs(now.mtimeMs - right.mtimeMs) < 0.01]).toEqual([right.ino, right.mode, true])
    // And right as it is on the next run.
    const last = await cli(['restore', '--files', '--to', to, '--config', b, '--json'])
    expect(last.stdout.trim().split('\n').map(l => JSON.parse(l) as { type: string, outcome?: string }).filter(e => e.type === 'file' && e.outcome !== 'already-there')).toEqual([])
  })
})
