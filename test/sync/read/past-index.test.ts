import { describe, it, expect } from 'vitest'
import pino from 'pino'
import { pastIndex, publish, readContext } from '../../../src/sync/index.js'
import { historyStart } from '../../../src/cli/commands/find-common.js'
import { SyncStore } from '../../../src/sync/index.js'
import { exportKey, importKey } from '../../../src/snapshot/index.js'
import { ManifestNamespaceError, PointerRolledBackError } from '../../../src/errors.js'
import { EXTERNAL, serviceUnderTest } from '../../helpers/service.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { handClock } from '../../helpers/clock.js'
import { repositoryOf, syncDevice, writeRows as write, syncOf } from '../../helpers/sync-device.js'

const logger = pino({ level: 'silent' })
const A = 'aaaaaaaa-0000-4000-8000-000000000000'
const B = 'bbbbbbbb-0000-4000-8000-000000000000'

describe.skipIf(EXTERNAL)('a past publish is read only from this namespace\'s chain', () => {
  it('get --at, find --at and log refuse another namespace\'s publish put behind this pointer', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'past-one' })
    const b = await syncDevice(root, 'b', B, { namespace: 'past-two' })
    importKey(b.config.stateDir, exportKey(a.config.stateDir))
    write(a, 'mine.md')
    await publish(syncOf(a, clients, logger))
    write(b, 'theirs.md')
    const theirs = await publish(syncOf(b, clients, logger))
    // The lying service: past-one's pointer names past-two's publish (same key, so it opens).
    await clients.pointers.put({ snapshotCid: theirs.cid, engine: 'cidsync-sqlite/2', namespace: 'past-one', network: 'mainnet', memories: 1 })

    // `get --at` / `restore --files --at`: their rows would be written into this namespace's folders.
    await expect(repositoryOf(a, clients).openPast(new Date())).rejects.toThrow(ManifestNamespaceError)
    // `find --at` and `log`: their names shown as this namespace's history.
    const start = await historyStart(repositoryOf(a, clients), {})
    const store = new SyncStore(a.config.stateDir)
    try {
      await expect(pastIndex(clients, start, new Date(), store.manifestCache, readContext(a.config, { label: 'find', passphrase: undefined }))).rejects.toThrow(ManifestNamespaceError)
    } finally {
      store.close()
    }
  })

  it('get --at refuses a pointer set back behind this device\'s own last publish, and still answers for a time before it', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'past-three' })
    write(a, 'first.md')
    // The two publishes an hour apart, on a clock the test moves.
    const clock = handClock()
    const first = await publish({ ...syncOf(a, clients, logger), clock })
    clock.move(1_800_000)
    const between = new Date(clock.now())
    clock.move(1_800_000)
    write(a, 'second.md')
    await publish({ ...syncOf(a, clients, logger), clock })
    // The lying service replays the first publish as the pointer.
    await clients.pointers.put({ snapshotCid: first.cid, engine: 'cidsync-sqlite/2', namespace: 'past-three', network: 'mainnet', memories: 1 })
    await expect(repositoryOf(a, clients).openPast(new Date())).rejects.toThrow(PointerRolledBackError)
    const older = await repositoryOf(a, clients).openPast(between)
    try {
      expect(older.cid).toBe(first.cid)
      expect(older.index.entries.list({ deviceId: A }).map(e => e.path)).toEqual(['first.md'])
    } finally {
      await older.close()
    }
  })
})
