import { describe, expect, it } from 'vitest'
import pino from 'pino'
import { prune, publish } from '../../../src/sync/index.js'
import type { ServiceClients } from '../../../src/remote/index.js'
import { EXTERNAL, serviceUnderTest } from '../../helpers/service.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { handClock } from '../../helpers/clock.js'
import { closeDeviceIndex, repositoryOf, syncDevice, syncOf, writeRows as write, type SyncDevice } from '../../helpers/sync-device.js'
import { exportKey, importKey } from '../../../src/snapshot/index.js'
import { pub, restoreInto } from '../v2-helpers.js'

const A = 'aaaaaaaa-0000-4000-8000-000000000000'
const B = 'bbbbbbbb-0000-4000-8000-000000000000'
const HOUR = 3_600_000
const DAY = 24 * HOUR
// Segments sealed without a cipher have no random nonce: the retry seals its own rows to the same bytes.
const PLAIN = 'deal = false\nencryption = "none"\naccept_unencrypted = true\n'
const logger = pino({ level: 'silent' })

async function restorer (root: string, name: string, from: SyncDevice, namespace: string): Promise<SyncDevice> {
  const r = await syncDevice(root, name, `${name.padEnd(8, '0').slice(0, 8)}-9999-4000-8000-000000000000`, { namespace, snapshot: PLAIN })
  importKey(r.config.stateDir, exportKey(from.config.stateDir))
  closeDeviceIndex(r)
  return r
}

async function listed (clients: ServiceClients): Promise<Set<string>> {
  const cids = new Set<string>()
  for await (const object of clients.objects.list()) cids.add(object.cid)
  return cids
}

describe.skipIf(EXTERNAL)('prune: what a publish attempt left, and the attempt made again', () => {
  it('never deletes what the publish in flight names, though an earlier attempt uploaded the same bytes and left them', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'ab-inflight', snapshot: PLAIN })
    const clock = handClock()
    write(a, 'first.md')
    await pub(a, clients, a.config, clock)
    const r = await restorer(root, 'b', a, 'ab-inflight')
    await restoreInto(clients, r, 'ab-inflight')
    const b = await syncDevice(root, 'b', B, { namespace: 'ab-inflight', snapshot: PLAIN })
    clock.move(HOUR)
    write(b, 'b.md')
    await pub(b, clients, b.config, clock)
    clock.move(HOUR)
    write(a, 'second.md')
    // A's attempt finds B's publish, merges, makes its attempt again; the retry stops before its PUT
    // (a network error, a kill -9, a daemon stop): the job is resumed by the next publish.
    const stop = new Error('stopped before the retry PUT')
    await expect(publish({
      ...syncOf(a, clients, logger, a.config),
      clock,
      onStep: (step, merges) => { if (step === 'pointer' && merges === 1) throw stop }
    })).rejects.toBe(stop)
    const store = repositoryOf(a, clients).store
    const job = store.current()
    expect(job).toBeDefined()
    const retryFiles = ((job as unknown as { files: Array<{ cid: string }> }).files).map(f => f.cid)
    // Sealed without a cipher, the retry's own segment is the first attempt's bytes: this attempt's now, not left.
    const left = new Set(store.abandonedUploads.all().map(l => l.cid))
    expect(retryFiles.filter(cid => left.has(cid))).toEqual([])
    const before = await listed(clients)
    expect(retryFiles.some(cid => before.has(cid))).toBe(true)

    // A prune runs meanwhile (the daemon's schedule, or `cidsync prune`), past the margin.
    await prune(repositoryOf(a, clients), { marginMs: DAY, now: new Date(clock.now() + 2 * DAY) })
    const after = await listed(clients)
    // The resumed publish PUTs a manifest naming these: what was stored stays.
    for (const cid of retryFiles) if (before.has(cid)) expect(after.has(cid), `${cid} deleted though the publish in flight names it`).toBe(true)

    await pub(a, clients, a.config, clock)
    const fresh = await restorer(root, 'c', a, 'ab-inflight')
    const { rows } = await restoreInto(clients, fresh, 'ab-inflight')
    expect((rows as unknown[][]).map(row => row[2]).sort()).toEqual(['b.md', 'first.md', 'second.md'])
  })
})
