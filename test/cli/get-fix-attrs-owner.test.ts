import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { chmod, chown, mkdir, readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

async function cli (args: string[]): Promise<{ code: number | null, stdout: string, stderr: string }> {
  return await runCli(args, { timeoutMs: 120_000 })
}

const asRoot = typeof process.getuid === 'function' && process.getuid() === 0

describe('restore: right bytes another user could still write are fetched again, not fixed in place', () => {
  it.runIf(asRoot)('never gives root\'s owner or a setuid bit to an inode another user holds', async () => {
    const dir = await useTempDir()
    const notes = join(dir, 'notes')
    const service = join(dir, 'service')
    await mkdir(notes, { recursive: true })
    const config = (name: string, folder: string): string =>
      `state_dir = "${name}-state"\nnamespace = "content"\n[[folders]]\nname = "notes"\npath = "${folder}"\nstore = true\n` +
      `[service]\ndir = "${service}"\n[snapshot]\ndeal = false\n[status]\nlisten = "127.0.0.1:0"\n`
    const a = join(dir, 'a.toml')
    await writeFile(a, config('a', notes))
    const tool = randomBytes(3000)
    const plain = randomBytes(2000)
    await writeFile(join(notes, 'tool'), tool)
    await chmod(join(notes, 'tool'), 0o4755)
    await writeFile(join(notes, 'plain.txt'), plain)
    await chmod(join(notes, 'plain.txt'), 0o644)
    expect((await cli(['snapshot', '--config', a])).code).toBe(0)
    const to = join(dir, 'back')
    const first = await cli(['restore', '--files', '--to', to, '--config', a])
    expect(first.code, first.stderr).toBe(0)
    const restored = join(to, 'notes', 'tool')
    expect(((await stat(restored)).mode & 0o7777).toString(8)).toBe('4755')

    // Another user's file with the right bytes, and one anyone may write: between the hash and
    // the fix they may write other bytes into the inode; given root's owner and setuid in place,
    // those bytes would run as root.
    await chown(restored, 12345, 12345)
    await chmod(restored, 0o755)
    const open = join(to, 'notes', 'plain.txt')
    await chmod(open, 0o666)
    const before = { tool: (await stat(restored)).ino, plain: (await stat(open)).ino }
    const again = await cli(['restore', '--files', '--to', to, '--config', a, '--json'])
    expect(again.code, again.stderr).toBe(0)
    const now = await stat(restored)
    expect([now.uid, now.gid, (now.mode & 0o7777).toString(8)]).toEqual([0, 0, '4755'])
    expect((await readFile(restored)).equals(tool)).toBe(true)
    expect(now.ino).not.toBe(before.tool)
    const plainNow = await stat(open)
    expect((plainNow.mode & 0o7777).toString(8)).toBe('644')
    expect(plainNow.ino).not.toBe(before.plain)
    expect((await readFile(open)).equals(plain)).toBe(true)
  })
})
