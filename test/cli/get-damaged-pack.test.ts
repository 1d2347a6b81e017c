import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { mkdir, truncate, writeFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { storedBlockPack, storedBlocks } from '../helpers/service-blocks.js'

/** A service data dir whose pack lost its end (a disk, a copy cut short) is damage: exit 4, named, never "try again later". */
describe('cidsync get from an embedded service whose pack was cut short', () => {
  it('names the damage (ERR_SERVICE_DATA_DAMAGED) and exits 4', async () => {
    const dir = await useTempDir()
    const notes = join(dir, 'notes')
    await mkdir(notes, { recursive: true })
    const service = join(dir, 'service')
    const config = join(dir, 'a.toml')
    await writeFile(config, `state_dir = "state"\nnamespace = "cut"\n[[folders]]\nname = "notes"\npath = "${notes}"\nstore = true\n` +
      `[service]\ndir = "${service}"\n[content]\nencryption = "none"\n[snapshot]\ndeal = false\n[status]\nlisten = "127.0.0.1:0"\n`)
    await writeFile(join(notes, 'big.bin'), randomBytes(2 * 1024 * 1024 + 3))
    const stored = await runCli(['snapshot', '--config', config], { timeoutMs: 120_000 })
    expect(stored.code, stored.stderr).toBe(0)
    // The pack holding the file's first leaf loses everything from its middle on.
    const pack = storedBlockPack(service, storedBlocks(service).find(cid => cid.startsWith('bafkrei')) as string)
    await truncate(pack, Math.floor((await stat(pack)).size / 2))
    const got = await runCli(['get', 'notes/big.bin', '--to', join(dir, 'got'), '--config', config], { timeoutMs: 120_000 })
    expect(got.code, got.stderr).toBe(4)
    expect(got.stderr).toContain('[ERR_SERVICE_DATA_DAMAGED]')
    expect(got.stderr).not.toContain('try again later')
  }, 240_000)
})
