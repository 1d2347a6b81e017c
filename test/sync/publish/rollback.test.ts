import { describe, expect, it, onTestFinished } from 'vitest'
import pino from 'pino'
import { publish, restore, SyncRunner, type SyncService } from '../../../src/sync/index.js'
import { exportKey, importKey } from '../../../src/snapshot/index.js'
import { indexPath, openIndex } from '../../../src/index/index.js'
import { statusProblems } from '../../../src/cli/status-check.js'
import type { StatusDocument } from '../../../src/daemon/index.js'
import { EXTERNAL, serviceUnderTest } from '../../helpers/service.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { closeDeviceIndex, restoring, syncOf, syncDevice, writeRows as write, type SyncDevice } from '../../helpers/sync-device.js'
import { until } from '../../helpers/wait.js'

const logger = pino({ level: 'silent' })
const A = 'aaaaaaaa-0000-4000-8000-000000000000'
const B = 'bbbbbbbb-0000-4000-8000-000000000000'
const C = 'cccccccc-0000-4000-8000-000000000000'

const names = (prefix: string, n: number): string[] => Array.from({ length: n }, (_, i) => `${prefix}-${i}.md`)
const components = (d: SyncDevice, clients: SyncService): Parameters<typeof publish>[0] => syncOf(d, clients, logger)

/** What `status --check` says of a status whose publishing part is `publish` (the rest healthy). */
const checkOf = (publish: StatusDocument['publish']): string[] =>
  statusProblems({ folders: [], service: { error: null }, publish, restorable: null, index: { writeErrors: 0 } } as unknown as StatusDocument)

describe.skipIf(EXTERNAL)('a pointer set back while the daemon has nothing to publish', () => {
  it('is found by the next reconciliation, fails --check until healed, and is published on top keeping the hidden publishes', async () => {
    const { clients, local } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'idle' })
    const b = await syncDevice(root, 'b', B, { namespace: 'idle' })
    importKey(b.config.stateDir, exportKey(a.config.stateDir))
    write(a, ...names('first', 60))
    const first = await publish(components(a, clients))
    write(a, ...names('later', 40))
    await publish(components(a, clients))
    write(b, ...names('b', 25))
    expect((await publish(components(b, clients))).entries).toBe(125)
    // A takes B's publish in: nothing of its own is left to publish.
    expect(await publish(components(a, clients))).toMatchObject({ skipped: true, merged: 1 })

    const runner = new SyncRunner({ ...syncOf(a, clients, logger), credentials: () => ({ apiKey: undefined, sessionToken: undefined }) })
    onTestFinished(async () => { await runner.stop() })
    // The lying service sets the pointer back; its PUTs fail for now, so the heal waits.
    await clients.pointers.put({ snapshotCid: first.cid, engine: 'cidsync-sqlite/2', namespace: 'idle', network: 'mainnet', memories: 60 })
    local?.faults.set('pointers_put', { errorRate: 1, status: 500 })
    expect(await runner.reconcileNow()).toMatchObject({ pointerSetBack: true })
    await until(() => runner.status().failures >= 1 ? true : undefined, 30_000, 'the publish on top to fail')
    const setBack = runner.status()
    expect(setBack.pointer).toMatchObject({ cid: first.cid, inSync: false, setBack: true })
    expect(setBack.pointer.why).toContain('ERR_POINTER_ROLLED_BACK')
    expect(setBack.rolledBack).toMatchObject({ code: 'ERR_POINTER_ROLLED_BACK', pointer: first.cid })
    expect(checkOf(setBack).join('\n')).toMatch(/pointer: not in sync: .*set it back/)

    // The service takes PUTs again: the next reconciliation heals it.
    local?.faults.clear()
    expect(await runner.reconcileNow()).toMatchObject({ pointerSetBack: true })
    const healed = await until(async () => {
      const cid = (await clients.pointers.current('idle', 'mainnet')).snapshotCid
      return cid !== first.cid && runner.status().pointer.cid === cid ? cid : undefined
    }, 30_000, 'the pointer published on top')
    const after = runner.status()
    expect(after.pointer).toMatchObject({ inSync: true, setBack: false })
    expect(checkOf(after).join('\n')).not.toContain('pointer:')
    // Published on top of what this device last held: the publishes the rollback hid stay in the history.
    const history = runner.history()
    expect(history.map(h => h.cid)[0]).toBe(healed)
    expect(history.length).toBe(4)
    expect(history.at(-1)?.cid).toBe(first.cid)

    const c = await syncDevice(root, 'c', C, { namespace: 'idle' })
    importKey(c.config.stateDir, exportKey(a.config.stateDir))
    closeDeviceIndex(c)
    await restore(restoring(clients, c.config), { namespace: 'idle', network: 'mainnet', force: true })
    const restored = openIndex(indexPath(c.config.stateDir), { readonly: true })
    try {
      expect(restored.entries.list({}).length).toBe(125)
    } finally {
      restored.close()
    }
  })
})
