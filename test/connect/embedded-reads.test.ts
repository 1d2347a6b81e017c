import { describe, expect, it } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { loadConfig, type Config } from '../../src/config/index.js'
import { connectReads, connectService, heldAmongOf, type OpenedHome } from '../../src/connect/index.js'
import { openEmbeddedReads } from '../../src/connect/embedded-reads.js'
import { cidProfile } from '../../src/content/index.js'
import type { ServiceHome } from '../../src/store/index.js'
import { EXTERNAL } from '../helpers/service.js'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { embeddedDeviceConfig } from '../helpers/rolled-back.js'

const A = 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku'
const B = 'bafkreie7q3iidccmpvszul7kudcvvuavuo7u6gzlbobczuar5vgouzlyme'

async function embeddedConfig (): Promise<Config> {
  const dir = await useTempDir()
  await writeFile(join(dir, 'c.toml'), 'state_dir = "state"\n')
  return loadConfig({ configPath: join(dir, 'c.toml'), env: {} })
}

/** The embedded service's reads, counting the starts they ask for (each a real start). */
async function readsCounting (config: Config, env: NodeJS.ProcessEnv = {}): Promise<{ reads: OpenedHome<ServiceHome> | undefined, starts: () => number }> {
  let starts = 0
  const reads = await openEmbeddedReads(config.service.dir, env, async () => {
    starts++
    const connection = await connectService(config, env)
    return { home: connection.clients, close: connection.close }
  })
  return { reads, starts: () => starts }
}

describe('the embedded service read without a start', () => {
  it('answers the pointer and the account\'s listing from its database as the started service does, a pointer set back too', async () => {
    const config = await embeddedConfig()
    const service = await connectService(config, {})
    let uploaded: string
    try {
      const path = join(config.stateDir, 'object')
      await writeFile(path, 'held')
      uploaded = (await service.clients.objects.put(path, cidProfile('kubo-cidv1'))).cid
      await service.clients.pointers.put({ snapshotCid: B, engine: 'cidsync-sqlite/2', namespace: 'default', network: 'mainnet', memories: 3 })
    } finally {
      await service.close()
    }
    for (const head of [B, A]) {
      const started = await connectService(config, {})
      const { reads, starts } = await readsCounting(config)
      try {
        if (reads === undefined) throw new Error('no in-process reads on a service with an account')
        expect(await reads.home.pointers.current('default', 'mainnet')).toEqual(await started.clients.pointers.current('default', 'mainnet'))
        expect((await reads.home.pointers.current('default', 'mainnet')).snapshotCid).toBe(head)
        const asked = new Set([uploaded, A])
        expect(await heldAmongOf(reads.home.objects)?.(asked, {})).toEqual(await heldAmongOf(started.clients.objects)?.(asked, {}))
        expect(starts()).toBe(0)
        // The pointer set back, as a lying service would: the next read gives the older one.
        await started.clients.pointers.put({ snapshotCid: A, engine: 'cidsync-sqlite/2', namespace: 'default', network: 'mainnet' })
      } finally {
        await reads?.close()
        await started.close()
      }
    }
  })

  it('starts the service for what its database does not answer: a missing pointer, an object', async () => {
    const config = await embeddedConfig()
    const service = await connectService(config, {})
    const path = join(config.stateDir, 'object')
    await writeFile(path, 'bytes')
    const { cid } = await service.clients.objects.put(path, cidProfile('kubo-cidv1'))
    await service.close()
    const { reads, starts } = await readsCounting(config)
    try {
      await expect(reads?.home.pointers.current('default', 'mainnet')).rejects.toMatchObject({ code: 'ERR_POINTER_NOT_FOUND' })
      expect(starts()).toBe(1)
      const bytes = await reads?.home.objects.getBytes(cid, cidProfile('kubo-cidv1'))
      expect(Buffer.concat(bytes ?? []).toString()).toBe('bytes')
      expect(starts()).toBe(1)
    } finally {
      await reads?.close()
    }
  })

  it('is not used before the service has an account, nor with the admin routes on', async () => {
    const config = await embeddedConfig()
    expect((await readsCounting(config)).reads).toBeUndefined()
    const fresh = await connectReads(config, {})
    try {
      // Started as before: the account is made, and the pointer asked of the service.
      await expect(fresh.home.pointers.current('default', 'mainnet')).rejects.toMatchObject({ code: 'ERR_POINTER_NOT_FOUND' })
    } finally {
      await fresh.close()
    }
    expect((await readsCounting(config)).reads).toBeDefined()
    await (await readsCounting(config)).reads?.close()
    expect((await readsCounting(config, { CIDSYNC_EMBEDDED_ADMIN: '1' })).reads).toBeUndefined()
  })
})

describe.skipIf(EXTERNAL)('history, find --at and log on the embedded default (processes)', () => {
  it('read the pointer the service holds, and a pointer set back is still refused or said', async () => {
    const root = await useTempDir()
    const a = await embeddedDeviceConfig(root, 'a')
    const cli = async (args: string[]): Promise<{ code: number | null, stdout: string, stderr: string }> => await runCli([...args, '--config', a], { timeoutMs: 60_000 })
    const heads: string[] = []
    for (const text of ['zero', 'one', 'two, longer']) {
      await writeFile(join(root, 'a', 'notes', 'plan.md'), text)
      expect((await cli(['snapshot'])).code).toBe(0)
      heads.unshift((JSON.parse((await cli(['history', '--json', '--limit', '1'])).stdout) as Array<{ cid: string }>)[0]?.cid as string)
    }
    const history = async (): Promise<string[]> => (JSON.parse((await cli(['history', '--json'])).stdout) as Array<{ cid: string }>).map(r => r.cid)
    expect(await history()).toEqual(heads)
    expect((await cli(['log', 'notes/plan.md'])).code).toBe(0)
    // The service (as a lying one would) serves the publish before as the pointer again.
    const db = new Database(join(root, 'service', 'service.sqlite'))
    try { db.prepare('UPDATE pointers SET snapshot_cid = ?').run(heads[1]) } finally { db.close() }
    expect(await history()).toEqual(heads.slice(1))
    const found = await cli(['find', 'plan', '--at', new Date().toISOString()])
    expect([found.code, found.stderr]).toEqual([4, expect.stringContaining('ERR_POINTER_ROLLED_BACK')])
    const log = await cli(['log', 'notes/plan.md'])
    expect(log.code).toBe(0)
    expect(log.stderr).toContain(`the pointer holds ${heads[1] as string}, an older publish than the head this device read before (${heads[0] as string})`)
  }, 240_000)
})
