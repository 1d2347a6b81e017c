import { describe, expect, it } from 'vitest'
import { appendFile, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { HoldingProxy } from '../helpers/holding-proxy.js'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { within } from '../helpers/wait.js'
import { cliDevice, ok, shareKey, type CliDevice, type HistoryRow } from './v2-cli.js'

async function snapshotAt (d: CliDevice, at: string): Promise<void> {
  const done = await d.run(['snapshot'], { CIDSYNC_TEST_CLOCK: at })
  expect(done.code, done.stderr).toBe(0)
}

const history = async (d: CliDevice): Promise<HistoryRow[]> => JSON.parse((await ok(d, ['history', '--json'])).stdout) as HistoryRow[]

describe.skipIf(EXTERNAL)('forget: a publish landing on top of its new head at once', () => {
  it('says the forget was done, as it was, and records it', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await cliDevice(root, service, 'a')
    const b = await cliDevice(root, service, 'b')
    await shareKey(a, b)
    for (let hour = 1; hour <= 4; hour++) {
      await writeFile(join(a.folder, `h${hour}.md`), `hour ${hour}`)
      await snapshotAt(a, `2026-03-01T0${hour}:00:00.000Z`)
    }
    await appendFile(a.config, '[retention]\nkeep_last = 2\n')
    // a forgets through a proxy that holds its read of the pointer after it moved it.
    const proxy = await HoldingProxy.start(service.local.url)
    await writeFile(a.config, (await readFile(a.config, 'utf8')).split(service.local.url).join(proxy.url))
    const held = proxy.holdWhen((request, before) => request.method === 'GET' && request.path === '/v1/pointers/current' && before.some(p => p.method === 'PUT'))
    const forgetting = a.run(['forget', '--json'])
    await within(held, 60_000, 'the forget to read the pointer it moved')
    // b publishes on top of the new head meanwhile, as any device may.
    await writeFile(join(b.folder, 'b.md'), 'from b')
    await snapshotAt(b, '2026-03-01T05:00:00.000Z')
    proxy.letGo()
    const forgot = await forgetting

    // The chain lost its two oldest publishes: the forget was done.
    const after = await history(a)
    expect(after.slice(1).map(r => r.at.slice(0, 13))).toEqual(['2026-03-01T04', '2026-03-01T03'])
    expect(after).toHaveLength(3)
    expect(forgot.code, forgot.stderr).toBe(0)
    // Recorded for status: with no daemon, status shows the state dir's records (and exits 1).
    const status = await a.run(['status'])
    expect(status.stdout).toMatch(/retention: last forget at .*: kept 2 publishes, forgot 2, linked \d+ anew/)
  }, 300_000)
})
