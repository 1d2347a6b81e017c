import { describe, expect, it } from 'vitest'
import { createHash, randomBytes } from 'node:crypto'
import { mkdir, readFile, stat, utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

const sha = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex')

describe('get --json and what it brings back', () => {
  it('prints a line per file and only bytes that were written (no "bytes":0 lines); the file whole, its mtime to the microsecond', async () => {
    const dir = await useTempDir()
    const notes = join(dir, 'notes')
    await mkdir(notes)
    // Large enough for its parts to be opened in slices.
    const large = randomBytes(3 * 1024 * 1024 + 4097)
    await writeFile(join(notes, 'large.bin'), large)
    // A time with whole microseconds, as the index keeps it once stat gave it.
    await utimes(join(notes, 'large.bin'), 1_795_844_314.880466, 1_795_844_314.880466)
    const wantUs = (await stat(join(notes, 'large.bin'), { bigint: true })).mtimeNs / 1000n
    const config = join(dir, 'a.toml')
    await writeFile(config, `state_dir = "a-state"\nnamespace = "content"\n[[folders]]\nname = "notes"\npath = "${notes}"\nstore = true\n` +
      `[service]\ndir = "${join(dir, 'service')}"\n[snapshot]\ndeal = false\n[status]\nlisten = "127.0.0.1:0"\n`)
    const stored = await runCli(['snapshot', '--config', config], { timeoutMs: 120_000 })
    expect(stored.code, stored.stderr).toBe(0)
    const to = join(dir, 'back')
    const got = await runCli(['get', 'notes/large.bin', '--to', to, '--json', '--config', config], { timeoutMs: 120_000 })
    expect(got.code, got.stderr).toBe(0)
    const lines = got.stdout.trim().split('\n').map(l => JSON.parse(l) as { type: string, bytes?: number, outcome?: string, path?: string })
    const bytes = lines.filter(l => l.type === 'bytes')
    expect(bytes.length).toBeGreaterThan(0)
    expect(bytes.every(l => (l.bytes ?? 0) > 0)).toBe(true)
    expect(bytes.reduce((sum, l) => sum + (l.bytes ?? 0), 0)).toBe(large.byteLength)
    expect(lines.filter(l => l.type === 'file')).toEqual([expect.objectContaining({ path: 'notes/large.bin', outcome: 'written' })])
    const back = join(to, 'notes', 'large.bin')
    expect(sha(await readFile(back))).toBe(sha(large))
    expect((await stat(back, { bigint: true })).mtimeNs / 1000n).toBe(wantUs)
  })
})
