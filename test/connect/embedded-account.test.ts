import { describe, expect, it } from 'vitest'
import { existsSync, statSync } from 'node:fs'
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { loadConfig, type Config } from '../../src/config/index.js'
import { connectReads, connectService } from '../../src/connect/index.js'
import { EmbeddedAccountChangedError } from '../../src/errors.js'
import { useTempDir } from '../helpers/temp-dir.js'

/** A state dir on the embedded service in `service`, or on the default one (state_dir/service). */
async function device (root: string, name: string, service?: string): Promise<Config> {
  await mkdir(join(root, name, 'state'), { recursive: true })
  await writeFile(join(root, name, 'c.toml'), `state_dir = "state"\n[service]\nmode = "embedded"\n${service === undefined ? '' : `dir = "${service}"\n`}`)
  return loadConfig({ configPath: join(root, name, 'c.toml'), env: {} })
}

/** A CID for a pointer to name: the account is then in use. */
const PUBLISHED = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'

/** One command's reach of the service; `publish` sets the pointer, as a publish does. */
async function connected (config: Config, publish = false): Promise<void> {
  const connection = await connectService(config, {})
  try {
    if (publish) await connection.clients.pointers.put({ snapshotCid: PUBLISHED, engine: 'cidsync-sqlite/2', namespace: config.namespace, network: config.network })
  } finally {
    await connection.close()
  }
}

const noted = async (config: Config): Promise<string | undefined> => await readFile(join(config.stateDir, 'embedded-account'), 'utf8').then(t => t.trim(), () => undefined)

describe('the embedded service\'s account, as this state dir notes it', () => {
  it('is noted once found there (0600); a dir not mounted, emptied or holding another account is refused, and none is made there', async () => {
    const root = await useTempDir()
    const shared = join(root, 'nas', 'service')
    const a = await device(root, 'a', shared)
    // Not noted while the account is not in use: made by a command, nothing published there.
    await connected(a)
    await connected(a)
    expect(await noted(a)).toBeUndefined()
    // Published there: noted by the next command, which finds the account in use.
    await connected(a, true)
    await connected(a)
    expect(await noted(a)).toMatch(/^0x[0-9a-f]{40}$/)
    expect(statSync(join(a.stateDir, 'embedded-account')).mode & 0o777).toBe(0o600)
    // A second device on it: the same account, noted at its first command.
    const b = await device(root, 'b', shared)
    await connected(b)
    expect(await noted(b)).toBe(await noted(a))

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
    await connected(other, true)
    await expect(connected(a)).rejects.toThrow(/holds another account \(0x[0-9a-f]{40}\)/)

    // Mounted again: as before.
    await rm(shared, { recursive: true })
    await rename(`${shared}.off`, shared)
    await connected(a)
    await connected(b)
  })

  it('a first command on the default dir, before [service] dir names the shared one, binds nothing', async () => {
    const root = await useTempDir()
    const shared = join(root, 'nas', 'service')
    const a = await device(root, 'a', shared)
    await connected(a, true)
    // c's commands reach its own default dir: a new account there, nothing published, never noted.
    const c = await device(root, 'c')
    await connected(c)
    await connected(c)
    expect(await noted(c)).toBeUndefined()
    // Set to the shared dir, as the pointer's error says: that account is the one noted.
    await writeFile(join(root, 'c', 'c.toml'), `state_dir = "state"\n[service]\nmode = "embedded"\ndir = "${shared}"\n`)
    const shared3 = loadConfig({ configPath: join(root, 'c', 'c.toml'), env: {} })
    await connected(shared3)
    await connected(a)
    expect(await noted(shared3)).toBe(await noted(a))
  })

  it('a note it cannot read, or that holds no address, fails closed; one in capitals is the same address', async () => {
    const root = await useTempDir()
    const a = await device(root, 'a')
    await connected(a, true)
    await connected(a)
    const marker = join(a.stateDir, 'embedded-account')
    const address = await noted(a) as string
    await writeFile(marker, '')
    await expect(connected(a)).rejects.toThrow(/holds no address: remove it/)
    await rm(marker)
    await mkdir(marker)
    await expect(connected(a)).rejects.toThrow(/cannot be read \(EISDIR\)/)
    await rm(marker, { recursive: true })
    await writeFile(marker, `${address.toUpperCase().replace('0X', '0x')}\n`)
    await connected(a)
  })
})
