import { describe, expect, it } from 'vitest'
import { existsSync, statSync } from 'node:fs'
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { loadConfig, type Config } from '../../src/config/index.js'
import { connectReads, connectService } from '../../src/connect/index.js'
import { EmbeddedAccountChangedError } from '../../src/errors.js'
import { useTempDir } from '../helpers/temp-dir.js'

/** A state dir on the embedded service in `service` (made when first asked, as a user's first command does). */
async function device (root: string, name: string, service: string): Promise<Config> {
  await mkdir(join(root, name, 'state'), { recursive: true })
  await writeFile(join(root, name, 'c.toml'), `state_dir = "state"\n[service]\nmode = "embedded"\ndir = "${service}"\n`)
  return loadConfig({ configPath: join(root, name, 'c.toml'), env: {} })
}

async function connected (config: Config): Promise<string> {
  const connection = await connectService(config, {})
  try {
    return (await connection.clients.pointers.current(config.namespace, config.network).catch(() => undefined))?.snapshotCid ?? ''
  } finally {
    await connection.close()
  }
}

describe('the embedded service\'s account, as this state dir knows it', () => {
  it('is noted at the first command, 0600; a dir not mounted, emptied or holding another account is refused, and none is made there', async () => {
    const root = await useTempDir()
    const shared = join(root, 'nas', 'service')
    const a = await device(root, 'a', shared)
    await connected(a)
    const marker = join(a.stateDir, 'embedded-account')
    expect((await readFile(marker, 'utf8')).trim()).toMatch(/^0x[0-9a-f]{40}$/)
    expect(statSync(marker).mode & 0o777).toBe(0o600)
    // The same dir again, and a second device on it: the same account, no refusal.
    await connected(a)
    const b = await device(root, 'b', shared)
    await connected(b)
    expect(await readFile(join(b.stateDir, 'embedded-account'), 'utf8')).toBe(await readFile(marker, 'utf8'))

    // Not mounted: refused before anything is made there.
    await rename(shared, `${shared}.off`)
    await expect(connected(a)).rejects.toBeInstanceOf(EmbeddedAccountChangedError)
    await expect(connectReads(a, {})).rejects.toThrow(/does not exist, while this state dir used account 0x[0-9a-f]{40} there\. Is the folder mounted/)
    expect(existsSync(shared)).toBe(false)
    // An empty mount point: refused, and no account made in it.
    await mkdir(shared)
    await expect(connected(a)).rejects.toThrow(/holds no account/)
    expect(existsSync(join(shared, 'embedded-account.json'))).toBe(false)
    // Another service's dir: refused, naming both accounts.
    await rm(shared, { recursive: true })
    const other = await device(root, 'other', shared)
    await connected(other)
    await expect(connected(a)).rejects.toThrow(/holds another account \(0x[0-9a-f]{40}\)/)

    // Mounted again: as before.
    await rm(shared, { recursive: true })
    await rename(`${shared}.off`, shared)
    await connected(a)
    // Starting over, as the error says: the marker removed, the new account is noted.
    await rm(shared, { recursive: true })
    await expect(connected(a)).rejects.toBeInstanceOf(EmbeddedAccountChangedError)
    await rm(marker)
    await connected(a)
    expect(existsSync(join(shared, 'embedded-account.json'))).toBe(true)
    expect((await readFile(marker, 'utf8')).trim()).not.toBe((await readFile(join(b.stateDir, 'embedded-account'), 'utf8')).trim())
  })
})
