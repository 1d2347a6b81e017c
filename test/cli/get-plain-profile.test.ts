import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

/**
 * Plain content (`encryption = "none"`) is the file itself on the service, uploaded under the
 * folder's CID profile: bringing it back verifies it under that profile, not the one sealed
 * objects are uploaded with (a file of 1 MiB leaves failed as "not its CID" before).
 */
describe('cidsync get and restore --files of plain content stored under another profile', () => {
  it.each(['unixfs-v1-2025', 'unixfs-v0-2015'])('brings back a file of several leaves stored under %s, byte for byte', async (profile) => {
    const dir = await useTempDir()
    const notes = join(dir, 'notes')
    await mkdir(notes, { recursive: true })
    const config = join(dir, 'a.toml')
    await writeFile(config, `state_dir = "state"\nnamespace = "plain"\ncid_profile = "${profile}"\n[[folders]]\nname = "notes"\npath = "${notes}"\nstore = true\n` +
      `[service]\ndir = "${join(dir, 'service')}"\n[content]\nencryption = "none"\n[snapshot]\ndeal = false\n[status]\nlisten = "127.0.0.1:0"\n`)
    const big = randomBytes(3 * 1024 * 1024 + 5)
    await writeFile(join(notes, 'big.bin'), big)
    const run = async (args: string[]): Promise<void> => {
      const done = await runCli([...args, '--config', config], { timeoutMs: 120_000 })
      expect(done.code, `${args.join(' ')}: ${done.stderr}`).toBe(0)
    }
    await run(['snapshot'])
    await run(['get', 'notes/big.bin', '--to', join(dir, 'got')])
    expect((await readFile(join(dir, 'got', 'notes', 'big.bin'))).equals(big)).toBe(true)
    await run(['restore', '--files', '--to', join(dir, 'restored')])
    expect((await readFile(join(dir, 'restored', 'notes', 'big.bin'))).equals(big)).toBe(true)
    await run(['verify', '--content'])
  }, 240_000)
})
