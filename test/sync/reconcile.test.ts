import { describe, it, expect, afterEach } from 'vitest'
import { join } from 'node:path'
import { writeFile } from 'node:fs/promises'
import pino from 'pino'
import { loadConfig } from '../../src/config/index.js'
import { indexPath, openIndex, type Index } from '../../src/index/index.js'
import { reconcile, Repository } from '../../src/sync/index.js'
import { cidProfile } from '../../src/content/index.js'
import { adminClient, localServiceUnderTest, EXTERNAL } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { syncStoreOwner } from '../helpers/sync-device.js'

const DEVICE = 'aaaaaaaa-0000-4000-8000-000000000000'
const open: Index[] = []
afterEach(() => { for (const i of open.splice(0)) i.close() })

describe.skipIf(EXTERNAL)('reconciliation', () => {
  it('mirrors 5,000 uploads across pages of 100, marks one removed remotely as gone, and cross-references local files', async () => {
    const { clients, local, address } = await localServiceUnderTest({ pageSize: 100 })
    const admin = adminClient(local)
    await admin.send({ method: 'POST', path: '/local/seed-files', json: { address, count: 4_999 } })
    const dir = await useTempDir()
    await writeFile(join(dir, 'mine.txt'), 'mine')
    const { cid } = await clients.objects.put(join(dir, 'mine.txt'), cidProfile('kubo-cidv1'))
    await writeFile(join(dir, 'c.toml'), 'state_dir = "state"\n')
    const config = loadConfig({ configPath: join(dir, 'c.toml'), env: {} })
    const { mkdirSync } = await import('node:fs')
    mkdirSync(config.stateDir, { recursive: true })
    const index = openIndex(indexPath(config.stateDir))
    open.push(index)
    index.entries.registerDevice(DEVICE, 'a')
    index.entries.apply(DEVICE, [{ kind: 'upsert', folder: 'notes', path: 'mine.txt', size: 4, mtimeMs: 1, cid, cidProfile: 'kubo-cidv1' }, { kind: 'upsert', folder: 'notes', path: 'other.txt', size: 1, mtimeMs: 1, cid: 'bafkreinotuploaded', cidProfile: 'kubo-cidv1' }])
    const logger = pino({ level: 'silent' })
    const store = syncStoreOwner(config.stateDir).store

    const first = await reconcile({ index, logger, deviceId: DEVICE, repository: new Repository(config, clients, { store }) })
    expect(first).toMatchObject({ remoteFiles: 5_000, gone: 0 })
    expect(local.requestLog().filter(r => r.route === 'files_uploaded').length).toBe(50)
    expect(index.remote.stateOf(cid)).toBe('stored')
    expect(index.remote.stateOf('bafkreinotuploaded')).toBe('local-only')

    await clients.deals.addCid(cid)
    const firstSeed = (await (async () => { for await (const r of clients.files()) if (r.fileName === 'seed-0.bin') return r.cid })())
    await admin.send({ method: 'DELETE', path: '/local/files', query: { cid: firstSeed } })
    const second = await reconcile({ index, logger, deviceId: DEVICE, repository: new Repository(config, clients, { store }) })
    expect(second).toMatchObject({ remoteFiles: 4_999, gone: 1 })
    expect(index.remote.stateOf(cid)).toBe('sent-for-deal')
    expect(index.remote.counts(DEVICE)).toMatchObject({ remoteFiles: 4_999, gone: 1 })
    await admin.close()
  })
})
