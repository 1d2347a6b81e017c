import { describe, expect, it } from 'vitest'
import { createServer } from 'node:net'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { loadConfig } from '../../src/config/index.js'
import { readFrom } from '../../src/cli/mirror-read.js'
import { directoryHome } from '../../src/store/index.js'
import { useTempDir } from '../helpers/temp-dir.js'

const CID = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'

/** A loopback port nothing listens on: the primary is down. */
async function closedPort (): Promise<number> {
  const server = createServer()
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  await new Promise<void>(resolve => server.close(() => resolve()))
  return port
}

describe('reading from the mirrors when the primary fails', () => {
  it('passes over a directory mirror whose disk is not mounted, for the next mirror', async () => {
    const root = await useTempDir()
    const url = `http://127.0.0.1:${await closedPort()}`
    const usb = join(root, 'usb')
    const nas = join(root, 'nas')
    await mkdir(usb)
    const { pointers } = directoryHome(nas, { create: true })
    await pointers.put({ snapshotCid: CID, engine: 'cidsync-sqlite/2', namespace: 'default', network: 'mainnet' })
    const config = join(root, 'cidsync.toml')
    await writeFile(config, `state_dir = "state"\n[service]\nmode = "remote"\ndeal_url = "${url}"\napi_url = "${url}"\npointer_url = "${url}"\nupload_url = "${url}"\ngateways = ["${url}"]\n` +
      `[[mirrors]]\nname = "usb"\npath = "${usb}"\n[[mirrors]]\nname = "nas"\npath = "${nas}"\n`)
    const stderr: string[] = []
    const write = process.stderr.write.bind(process.stderr)
    process.stderr.write = ((chunk: string) => { stderr.push(chunk); return true }) as typeof process.stderr.write
    let found: string
    try {
      found = await readFrom(loadConfig({ configPath: config, env: {} }), { fallBack: true }, async (source) => (await source.clients.pointers.current('default', 'mainnet')).snapshotCid)
    } finally {
      process.stderr.write = write
    }
    expect(found).toBe(CID)
    expect(stderr.join('')).toMatch(/mirror usb failed too: .*is not a cidsync directory store/)
    expect(stderr.join('')).toContain('read from mirror nas (the primary failed)')

    // A read that takes each file's failure as an outcome (restore --files) never throws: the
    // directory must be found no store before it is handed over, or the next mirror is never asked.
    stderr.length = 0
    process.stderr.write = ((chunk: string) => { stderr.push(chunk); return true }) as typeof process.stderr.write
    try {
      found = await readFrom(loadConfig({ configPath: config, env: {} }), { fallBack: true }, async (source, where) => {
        if (where === 'the primary') await source.clients.pointers.current('default', 'mainnet')
        return where
      })
    } finally {
      process.stderr.write = write
    }
    expect(found).toBe('mirror nas')
  })

  it('refuses a path that is no store once, before a file is read', async () => {
    const root = await useTempDir()
    const file = join(root, 'a-file')
    await writeFile(file, 'not a store')
    await writeFile(join(root, 'cidsync.toml'), 'state_dir = "state"\n')
    const config = loadConfig({ configPath: join(root, 'cidsync.toml'), env: {} })
    let asked = false
    await expect(readFrom(config, { from: file, fallBack: true }, async () => { asked = true })).rejects.toThrow(`directory ${file}: could not read ${file}/cidsync-store.json`)
    expect(asked).toBe(false)
  })
})
