import { describe, expect, it } from 'vitest'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { forget } from '../../../src/sync/index.js'
import { checkOwnPublishHeld } from '../../../src/sync/prune/index.js'
import { RetentionSetBackError } from '../../../src/errors.js'
import type { RetentionPolicy } from '../../../src/retention/index.js'
import type { ServiceClients } from '../../../src/remote/index.js'
import { EXTERNAL, serviceUnderTest } from '../../helpers/service.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { handClock } from '../../helpers/clock.js'
import { repositoryOf, syncDevice, writeRows as write, type SyncDevice } from '../../helpers/sync-device.js'
import { historyOf, pub, restoreInto, restorer } from '../v2-helpers.js'

const A = 'aaaaaaaa-0000-4000-8000-000000000000'
const B = 'bbbbbbbb-0000-4000-8000-000000000000'
const NS = 'own-publish-held'
const keepLast = (n: number): RetentionPolicy => ({ keepLast: n, keepHourly: 0, keepDaily: 0, keepWeekly: 0, keepMonthly: 0, keepYearly: 0, keepWithin: undefined })

/** The pointer set to `cid`, as a service restored from a backup would serve it. */
async function setBack (clients: ServiceClients, cid: string): Promise<void> {
  await clients.pointers.put({ snapshotCid: cid, engine: 'cidsync-sqlite/2', namespace: NS, network: 'mainnet' })
}

/** A state dir from before this device recorded the sequence it published: only its last publish's CID is known. */
function dropOwnSeq (d: SyncDevice): void {
  const db = new Database(join(d.config.stateDir, 'sync.sqlite'))
  try { db.prepare('DELETE FROM sync_state WHERE key = ?').run('own_published_seq') } finally { db.close() }
}

describe.skipIf(EXTERNAL)('a forget or prune checks the pointer holds this device\'s own last publish', () => {
  it('passes once another device\'s forget sealed it again; refuses the pointer set back; passes once this device publishes on top', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: NS })
    const clock = handClock()
    const cids: string[] = []
    for (let i = 0; i < 3; i++) {
      write(a, `f${i}.md`)
      cids.push((await pub(a, clients, a.config, clock)).cid)
      clock.move(3_600_000)
    }
    const check = async (): Promise<void> => { await checkOwnPublishHeld(repositoryOf(a, clients), 'prune') }
    // Nothing published: nothing to check.
    const fresh = await syncDevice(root, 'fresh', B, { namespace: NS })
    await checkOwnPublishHeld(repositoryOf(fresh, clients), 'prune')
    await check()

    // b takes a's publishes in, publishes on top, and forgets: a's last publish gets a new CID.
    const r = await restorer(root, 'b', a, NS)
    await restoreInto(clients, r, NS)
    const b = await syncDevice(root, 'b', B, { namespace: NS })
    write(b, 'from-b.md')
    await pub(b, clients, b.config, clock)
    const done = await forget(repositoryOf(b, clients), { policy: keepLast(1), now: new Date(clock.now()), timeZone: 'UTC' })
    expect(done.forgotten).toBeGreaterThan(0)
    const history = await historyOf(a, clients)
    expect(history.map(e => e.cid)).not.toContain(cids[2])
    expect(history.map(e => e.publishedAs)).toContain(cids[2])
    await check()

    // Set back behind a's last publish: refused, by the sequence and by the CID alike.
    await setBack(clients, cids[1] as string)
    await expect(check()).rejects.toBeInstanceOf(RetentionSetBackError)
    await expect(forget(repositoryOf(a, clients), { policy: keepLast(1), now: new Date(clock.now()), timeZone: 'UTC' })).rejects.toMatchObject({ code: 'ERR_RETENTION_POINTER_SET_BACK' })
    dropOwnSeq(a)
    await expect(check()).rejects.toBeInstanceOf(RetentionSetBackError)
    // The new chain, found by the CID a's publish was made with.
    await setBack(clients, done.head as string)
    await check()

    // Set back again; a publishes on top, and the check passes.
    await setBack(clients, cids[0] as string)
    await expect(check()).rejects.toThrow(/lacks this device's own last publish/)
    write(a, 'f3.md')
    await pub(a, clients, a.config, clock)
    await check()
  })

  it('says a publish of its own made after the pointer was read is contention, not a pointer set back', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: `${NS}-race` })
    const clock = handClock()
    write(a, 'f0.md')
    const first = (await pub(a, clients, a.config, clock)).cid
    // The caller read the pointer; then this device's daemon published on top of it.
    write(a, 'f1.md')
    const second = (await pub(a, clients, a.config, clock)).cid
    const repository = repositoryOf(a, clients)
    await expect(checkOwnPublishHeld(repository, 'prune', undefined, first)).rejects.toMatchObject({ code: 'ERR_PRUNE_CONTENDED' })
    await expect(checkOwnPublishHeld(repository, 'forget', undefined, first)).rejects.toMatchObject({ code: 'ERR_FORGET_CONTENDED', message: expect.stringMatching(/run it again/) })
    // Read now, the pointer holds it: nothing to refuse.
    await checkOwnPublishHeld(repository, 'prune')
    // A pointer that moved between two heads that both lack it is set back, whichever was read first:
    // "run it again" would never end against a service that serves them in turn.
    write(a, 'f2.md')
    await pub(a, clients, a.config, clock)
    await clients.pointers.put({ snapshotCid: second, engine: 'cidsync-sqlite/2', namespace: `${NS}-race`, network: 'mainnet' })
    await expect(checkOwnPublishHeld(repository, 'prune', undefined, first)).rejects.toBeInstanceOf(RetentionSetBackError)
  })
})
