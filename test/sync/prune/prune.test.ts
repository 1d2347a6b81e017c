import { describe, expect, it } from 'vitest'
import { forget, prune, publish } from '../../../src/sync/index.js'
import type { RetentionPolicy } from '../../../src/retention/index.js'
import { PruneContendedError } from '../../../src/errors.js'
import type { ServiceClients } from '../../../src/remote/index.js'
import { EXTERNAL, serviceUnderTest } from '../../helpers/service.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { handClock } from '../../helpers/clock.js'
import { closeDeviceIndex, repositoryOf, syncDevice, syncOf, writeRows as write, type SyncDevice } from '../../helpers/sync-device.js'
import { exportKey, importKey } from '../../../src/snapshot/index.js'
import { everything, historyOf, logger, pub, readIndex, restoreInto, restorer } from '../v2-helpers.js'

const A = 'aaaaaaaa-0000-4000-8000-000000000000'
const HOUR = 3_600_000
const DAY = 24 * HOUR
const keepLast = (n: number): RetentionPolicy => ({ keepLast: n, keepHourly: 0, keepDaily: 0, keepWeekly: 0, keepMonthly: 0, keepYearly: 0, keepWithin: undefined })
// A base every second publish: the deltas of forgotten publishes are then needed by no kept one.
const COMPACTING = 'deal = false\ncompact_after_deltas = 1\n'

async function listed (clients: ServiceClients): Promise<Set<string>> {
  const cids = new Set<string>()
  for await (const object of clients.objects.list()) cids.add(object.cid)
  return cids
}

const B = 'bbbbbbbb-0000-4000-8000-000000000000'

/** Device A's first publish, and device B with A's key and index, on one service, in `namespace`. */
async function twoDevices (namespace: string): Promise<{ clients: ServiceClients, root: string, a: Awaited<ReturnType<typeof syncDevice>>, b: Awaited<ReturnType<typeof syncDevice>>, clock: ReturnType<typeof handClock> }> {
  const { clients } = await serviceUnderTest()
  const root = await useTempDir()
  const a = await syncDevice(root, 'a', A, { namespace, snapshot: COMPACTING })
  const clock = handClock()
  write(a, 'first.md')
  await pub(a, clients, a.config, clock)
  const r = await restorer(root, 'b', a, namespace)
  await restoreInto(clients, r, namespace)
  const b = await syncDevice(root, 'b', B, { namespace, snapshot: COMPACTING })
  return { clients, root, a, b, clock }
}

// Segments sealed without a cipher have no random nonce: a retry seals its own rows to the same bytes.
const PLAIN = 'deal = false\nencryption = "none"\naccept_unencrypted = true\n'

/** A device that restores unencrypted publishes, with `from`'s key, its index closed. */
async function plainRestorer (root: string, name: string, from: SyncDevice, namespace: string): Promise<SyncDevice> {
  const r = await syncDevice(root, name, `${name.padEnd(8, '0').slice(0, 8)}-9999-4000-8000-000000000000`, { namespace, snapshot: PLAIN })
  importKey(r.config.stateDir, exportKey(from.config.stateDir))
  closeDeviceIndex(r)
  return r
}

describe.skipIf(EXTERNAL)('prune: what no kept publish needs is deleted', () => {
  it('counts the forgotten publishes of other devices, whose plain roots only they can delete', async () => {
    const { clients, a, b, clock } = await twoDevices('prune-others')
    for (let i = 0; i < 2; i++) {
      clock.move(HOUR)
      write(b, `b${i}.md`)
      await pub(b, clients, b.config, clock)
    }
    for (let i = 0; i < 3; i++) {
      clock.move(HOUR)
      write(a, `a${i}.md`)
      await pub(a, clients, a.config, clock)
    }
    await forget(repositoryOf(a, clients), { policy: keepLast(1), now: new Date(clock.now()), timeZone: 'UTC' })
    const dry = await prune(repositoryOf(a, clients), { marginMs: 0, now: new Date(clock.now() + DAY), dryRun: true })
    expect(dry.othersForgotten).toBe(2)
    // Counted once, by the prune that deletes them: the next finds them gone.
    const done = await prune(repositoryOf(a, clients), { marginMs: 0, now: new Date(clock.now() + DAY) })
    expect(done.othersForgotten).toBe(2)
    const again = await prune(repositoryOf(a, clients), { marginMs: 0, now: new Date(clock.now() + DAY) })
    expect(again.othersForgotten).toBe(0)
  })

  it('deletes what a publish attempt uploaded and left when another device published first; every kept publish restores', async () => {
    const { clients, root, a, b, clock } = await twoDevices('prune-left')
    clock.move(HOUR)
    write(b, 'b.md')
    await pub(b, clients, b.config, clock)
    // A's next publish finds B's on the pointer: its first attempt is left, merged and made again.
    clock.move(HOUR)
    write(a, 'second.md')
    await pub(a, clients, a.config, clock)
    const left = repositoryOf(a, clients).store.abandonedUploads.all()
    expect(left.map(l => l.kind).sort()).toContain('manifest')
    expect(left.some(l => l.kind === 'segment')).toBe(true)
    const history = (await historyOf(a, clients)).map(e => e.cid)
    expect(history.some(cid => left.some(l => l.cid === cid))).toBe(false)
    const before = await listed(clients)
    for (const l of left) expect(before.has(l.cid)).toBe(true)

    // Within the margin they stay; past it they go, and the history still restores whole.
    const held = await prune(repositoryOf(a, clients), { marginMs: DAY, now: new Date(clock.now()) })
    expect(held.deleted.manifest).toBe(0)
    const pruned = await prune(repositoryOf(a, clients), { marginMs: DAY, now: new Date(clock.now() + 2 * DAY) })
    expect(pruned.deleted.manifest + pruned.deleted.segment).toBe(left.length)
    const after = await listed(clients)
    for (const l of left) expect(after.has(l.cid)).toBe(false)
    const fresh = await restorer(root, 'c', a, 'prune-left')
    const { rows } = await restoreInto(clients, fresh, 'prune-left')
    expect((rows as unknown[][]).map(row => row[2]).sort()).toEqual(['b.md', 'first.md', 'second.md'])
    // The next prune finds them gone and stops asking.
    await prune(repositoryOf(a, clients), { marginMs: DAY, now: new Date(clock.now() + 2 * DAY) })
    expect(repositoryOf(a, clients).store.abandonedUploads.all()).toEqual([])
  })

  it('keeps a chain forgotten within the margin whole; past it, deletes what only that chain needed; every kept publish restores', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'prune-one', snapshot: COMPACTING })
    const clock = handClock()
    for (let i = 0; i < 6; i++) {
      write(a, `f${i}.md`)
      await pub(a, clients, a.config, clock)
      clock.move(HOUR)
    }
    const objectsBefore = await listed(clients)
    const oldChain = (await historyOf(a, clients)).map(e => e.cid)
    await forget(repositoryOf(a, clients), { policy: keepLast(2), now: new Date(clock.now()), timeZone: 'UTC' })
    const kept = await historyOf(a, clients)

    // Within the margin: the replaced chain is held whole, nothing goes.
    const held = await prune(repositoryOf(a, clients), { marginMs: DAY, now: new Date(clock.now()) })
    expect(held).toMatchObject({ chainsHeld: 1, deleted: { content: 0, segment: 0, manifest: 0 }, bytes: 0 })
    expect(await listed(clients)).toEqual(new Set([...objectsBefore, ...kept.map(e => e.cid)]))

    // A dry run past it counts and deletes nothing.
    const later = new Date(clock.now() + 2 * DAY)
    const dry = await prune(repositoryOf(a, clients), { marginMs: DAY, now: later, dryRun: true })
    expect(dry.deleted.manifest).toBe(6)
    // Every publish forgotten was this device's: no other device's plain root can hold them.
    expect(dry.othersForgotten).toBe(0)
    expect(dry.deleted.segment).toBeGreaterThan(0)
    expect(await listed(clients)).toEqual(new Set([...objectsBefore, ...kept.map(e => e.cid)]))

    const done = await prune(repositoryOf(a, clients), { marginMs: DAY, now: later })
    expect(done).toMatchObject({ chainsHeld: 0, deleted: dry.deleted, bytes: dry.bytes })
    expect(done.bytes).toBeGreaterThan(0)
    const after = await listed(clients)
    for (const cid of oldChain) expect(after.has(cid)).toBe(false)
    for (const entry of kept) expect(after.has(entry.cid)).toBe(true)

    // Each kept publish restores on a fresh device; a second prune finds nothing.
    const r = await restorer(root, 'r', a, 'prune-one')
    expect((await restoreInto(clients, r, 'prune-one')).rows).toEqual(readIndex(a.config, everything))
    const older = await restoreInto(clients, r, 'prune-one', { cid: kept[1]?.cid })
    expect(older.rows).toHaveLength(5)
    expect(await prune(repositoryOf(a, clients), { marginMs: DAY, now: later })).toMatchObject({ deleted: { content: 0, segment: 0, manifest: 0 } })
  })

  it('a publish made while it reads stops it before anything is deleted', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'prune-two', snapshot: COMPACTING })
    const clock = handClock()
    for (let i = 0; i < 4; i++) {
      write(a, `f${i}.md`)
      await pub(a, clients, a.config, clock)
      clock.move(HOUR)
    }
    await forget(repositoryOf(a, clients), { policy: keepLast(1), now: new Date(clock.now()), timeZone: 'UTC' })
    const before = await listed(clients)
    let reads = 0
    // The service as another device meets it: its publish lands between the reading and the deleting.
    // Index pointer reads only: the prune's own, then its read again before deleting.
    const racing = {
      ...clients,
      pointers: {
        current: async (...args: Parameters<ServiceClients['pointers']['current']>) => {
          if (!args[1].endsWith('~prune-list') && ++reads === 2) {
            write(a, 'late.md')
            await pub(a, clients, a.config, clock)
          }
          return await clients.pointers.current(...args)
        },
        put: clients.pointers.put
      }
    } as ServiceClients
    const err = await prune(repositoryOf(a, racing), { marginMs: 0, now: new Date(clock.now() + DAY) }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(PruneContendedError)
    for (const cid of before) expect(await clients.objects.has(cid)).toBe(true)
  })
})

describe.skipIf(EXTERNAL)('prune: the mirrors follow the pointer first', () => {
  it('a rerun still logs the new chain for the mirrors before a prune logs the old one\'s deletes', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'prune-three', snapshot: COMPACTING })
    const clock = handClock()
    for (let i = 0; i < 4; i++) {
      write(a, `f${i}.md`)
      await pub(a, clients, a.config, clock)
      clock.move(HOUR)
    }
    const oldHead = a.store.mirrorLog.lastPointer()
    expect(oldHead).toBeDefined()
    // As a kill at `forget:pointer` leaves it: the pointer moved, nothing after it ran.
    const pointers = Object.create(clients.pointers) as ServiceClients['pointers']
    pointers.put = async (...args) => {
      await clients.pointers.put(...args)
      throw new Error('killed')
    }
    const killed: ServiceClients = { ...clients, pointers }
    await expect(forget(repositoryOf(a, killed), { policy: keepLast(2), now: new Date(clock.now()), timeZone: 'UTC' })).rejects.toThrow('killed')
    const head = (await clients.pointers.current(a.config.namespace, 'mainnet')).snapshotCid
    expect(head).not.toBe(oldHead)

    // The rerun finds nothing to forget; then a prune past the margin deletes the old chain.
    await forget(repositoryOf(a, clients), { policy: keepLast(2), now: new Date(clock.now()), timeZone: 'UTC' })
    const pruned = await prune(repositoryOf(a, clients), { marginMs: DAY, now: new Date(clock.now() + 2 * DAY) })
    expect(pruned.deleted.manifest).toBeGreaterThan(0)

    // A mirror copies the log in order: its pointer must reach the new head before the old one's manifest goes.
    const rows = a.store.mirrorLog.after(0, 10_000)
    const firstDelete = rows.findIndex(r => r.kind === 'delete')
    const newPointer = rows.findIndex(r => r.kind === 'pointer' && r.cid === head)
    expect(rows.some(r => r.kind === 'delete' && r.cid === oldHead)).toBe(true)
    expect(newPointer).toBeGreaterThanOrEqual(0)
    expect(newPointer).toBeLessThan(firstDelete)
  })

  it('never deletes what the publish in flight names, though an earlier attempt uploaded the same bytes and left them', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'ab-inflight', snapshot: PLAIN })
    const clock = handClock()
    write(a, 'first.md')
    await pub(a, clients, a.config, clock)
    const r = await plainRestorer(root, 'b', a, 'ab-inflight')
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
    const fresh = await plainRestorer(root, 'c', a, 'ab-inflight')
    const { rows } = await restoreInto(clients, fresh, 'ab-inflight')
    expect((rows as unknown[][]).map(row => row[2]).sort()).toEqual(['b.md', 'first.md', 'second.md'])
  })
})
