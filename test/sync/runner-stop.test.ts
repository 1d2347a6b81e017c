import { describe, it, expect } from 'vitest'
import { Writable } from 'node:stream'
import pino from 'pino'
import { SyncRunner } from '../../src/sync/index.js'
import { EXTERNAL, serviceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { syncDevice, syncOf } from '../helpers/sync-device.js'
import { until } from '../helpers/wait.js'

describe.skipIf(EXTERNAL)('the runner stopped while it reconciles', () => {
  it('says the reconcile stopped, not that it failed: no error logged, none left in its status', async () => {
    const { clients, local } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', 'aaaaaaaa-0000-4000-8000-000000000000', { namespace: 'stop' })
    const lines: Array<{ level: number, msg: string }> = []
    const logger = pino({ level: 'info' }, new Writable({ write (chunk: Buffer, _enc, done) { lines.push(JSON.parse(chunk.toString()) as { level: number, msg: string }); done() } }))
    const runner = new SyncRunner({ ...syncOf(a, clients, logger), credentials: () => ({ apiKey: undefined, sessionToken: undefined }) })
    // Every request of the service slow: the reconcile is still asking when the stop comes.
    local?.faults.set('*', { latencyMs: 5_000 })
    const reconciling = runner.reconcileNow().then(() => 'done', (err: unknown) => err)
    await until(() => runner.reconcileStatus().running ? true : undefined, 10_000, 'the reconcile to run')
    await runner.stop()
    local?.faults.clear()
    expect(await reconciling).not.toBe('done')
    expect(lines.filter(l => l.level >= 50)).toEqual([])
    expect(lines.map(l => l.msg)).toContain('reconcile stopped: cidsync is stopping')
    expect(runner.reconcileStatus().lastError).toBeNull()
  })
})
