import { describe, expect, it } from 'vitest'
import { existsSync } from 'node:fs'
import { realpath } from 'node:fs/promises'
import { basename, join } from 'node:path'
import pino from 'pino'
import { indexPath } from '../../../src/index/index.js'
import { publish, restore, type RestoreProgress } from '../../../src/sync/index.js'
import { exportKey, importKey } from '../../../src/snapshot/index.js'
import { serviceUnderTest, EXTERNAL } from '../../helpers/service.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { canNameDescriptors, recordHandleSyncs } from '../../helpers/sync-probe.js'
import { closeDeviceIndex, restoring, syncDevice, writeRows, syncOf } from '../../helpers/sync-device.js'

const logger = pino({ level: 'silent' })
const NS = 'restore-durable'

describe.skipIf(EXTERNAL)('a restore of the index', () => {
  it.runIf(canNameDescriptors())('fsyncs the new index before it takes the name, and the state dir after the rename', async () => {
    const { clients } = await serviceUnderTest()
    const root = await realpath(await useTempDir())
    const a = await syncDevice(root, 'a', 'aaaaaaaa-0000-4000-8000-000000000000', { namespace: NS })
    writeRows(a, 'one.md')
    await publish(syncOf(a, clients, logger))
    const b = await syncDevice(root, 'b', 'bbbbbbbb-0000-4000-8000-000000000000', { namespace: NS })
    importKey(b.config.stateDir, exportKey(a.config.stateDir))
    closeDeviceIndex(b)
    const state = await realpath(b.config.stateDir)
    const target = join(state, basename(indexPath(b.config.stateDir)))
    const staged = `${target}.restoring`
    // For each sync: what it synced, and whether the new index had taken its name by then.
    const seen: Array<[string, boolean]> = []
    await recordHandleSyncs(path => seen.push([path, !existsSync(staged)]))
    await restore(restoring(clients, b.config), { namespace: NS, network: 'mainnet', force: true })
    const stagedSyncs = seen.filter(([path]) => path === staged)
    expect(stagedSyncs.length).toBeGreaterThan(0)
    expect(stagedSyncs.every(([, renamed]) => !renamed)).toBe(true)
    // The rename is durable once the state dir is synced after it.
    expect(seen.some(([path, renamed]) => path === state && renamed)).toBe(true)
  })
  it('tells its download as restore:download events, bytes so far and in all, the last with every byte', async () => {
    const { clients } = await serviceUnderTest()
    const root = await realpath(await useTempDir())
    const a = await syncDevice(root, 'a', 'aaaaaaaa-0000-4000-8000-000000000000', { namespace: `${NS}-told` })
    writeRows(a, 'one.md', 'two.md')
    await publish(syncOf(a, clients, logger))
    const b = await syncDevice(root, 'b', 'bbbbbbbb-0000-4000-8000-000000000000', { namespace: `${NS}-told` })
    importKey(b.config.stateDir, exportKey(a.config.stateDir))
    closeDeviceIndex(b)
    const told: RestoreProgress[] = []
    await restore(restoring(clients, b.config), { namespace: `${NS}-told`, network: 'mainnet', force: true, onProgress: (event) => { told.push(event) } })
    expect(told.length).toBeGreaterThan(0)
    expect(told.every(e => e.type === 'restore:download')).toBe(true)
    const last = told.at(-1)?.detail
    expect(last?.total).toBeGreaterThan(0)
    expect(last?.received).toBe(last?.total)
  })
})
