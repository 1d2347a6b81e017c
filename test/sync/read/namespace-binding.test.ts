import { describe, it, expect } from 'vitest'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import pino from 'pino'
import { publish, restore, SNAPSHOT_PROFILE } from '../../../src/sync/index.js'
import { writePublication } from '../../../src/sync/publish/publication.js'
import { exportKey, importKey } from '../../../src/snapshot/index.js'
import { ManifestNamespaceError, PointerUnreadableError } from '../../../src/errors.js'
import type { ServiceClients } from '../../../src/remote/index.js'
import { EXTERNAL, serviceUnderTest } from '../../helpers/service.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { restoring, syncDevice, writeRows as write, type SyncDevice, syncOf } from '../../helpers/sync-device.js'

const logger = pino({ level: 'silent' })
const A = 'aaaaaaaa-0000-4000-8000-000000000000'
const B = 'bbbbbbbb-0000-4000-8000-000000000000'
const E = 'eeeeeeee-0000-4000-8000-000000000000'

const ten = Array.from({ length: 10 }, (_, i) => `other-${i}.md`)
const devicesIn = (d: SyncDevice): string[] => d.index.entries.devices().filter(x => x.lastSeq > 0).map(x => x.id)

/** What an older cidsync published: a manifest naming no namespace, uploaded; answers its CID. */
async function unboundPublish (clients: ServiceClients, d: SyncDevice, previous: string | null, root: string): Promise<string> {
  const dir = join(root, `unbound-${d.id.slice(0, 4)}`)
  await mkdir(dir, { recursive: true })
  const made = await writePublication({ index: d.index, self: d.id, previous, dir, label: 'old', policy: { afterDeltas: 100, fraction: 100 }, encryption: 'aes-256-gcm', stateDir: d.config.stateDir })
  expect(made.manifest.namespace).toBeUndefined()
  for (const file of made.files) await clients.objects.put(file.path, SNAPSHOT_PROFILE)
  return made.manifestFile.cid
}

describe.skipIf(EXTERNAL)('manifests are bound to their namespace and network', () => {
  it('another namespace\'s manifest replayed behind this pointer is refused, never merged or published on', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'ns-one' })
    const b = await syncDevice(root, 'b', B, { namespace: 'ns-two' })
    importKey(b.config.stateDir, exportKey(a.config.stateDir))
    write(a, 'mine.md')
    const mine = await publish(syncOf(a, clients, logger))
    write(b, ...ten)
    const theirs = await publish(syncOf(b, clients, logger))
    // The lying service: ns-one's pointer names ns-two's publish.
    await clients.pointers.put({ snapshotCid: theirs.cid, engine: 'cidsync-sqlite/2', namespace: 'ns-one', network: 'mainnet', memories: 10 })
    write(a, 'more.md')
    const error = await publish(syncOf(a, clients, logger)).catch((err: unknown) => err)
    expect(error).toBeInstanceOf(PointerUnreadableError)
    expect((error as Error).message).toMatch(/published for namespace ns-two on mainnet, not ns-one on mainnet/)
    expect(devicesIn(a)).toEqual([A])
    expect((await clients.pointers.current('ns-one', 'mainnet')).snapshotCid).toBe(theirs.cid)
    // A restore refuses it too, while the publish of ns-one restores.
    await expect(restore(restoring(clients, a.config), { namespace: 'ns-one', network: 'mainnet', dryRun: true })).rejects.toThrow(ManifestNamespaceError)
    await expect(restore(restoring(clients, a.config), { namespace: 'ns-one', network: 'mainnet', dryRun: true, cid: mine.cid })).resolves.toMatchObject({ dryRun: true })
  })

  it('an unbound (older-format) manifest is merged only where it is genuinely older: made on top of this namespace\'s publish', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'ns-three' })
    const b = await syncDevice(root, 'b', B, { namespace: 'ns-four' })
    const e = await syncDevice(root, 'e', E, { namespace: 'ns-three' })
    importKey(b.config.stateDir, exportKey(a.config.stateDir))
    importKey(e.config.stateDir, exportKey(a.config.stateDir))
    write(a, 'mine.md')
    const mine = await publish(syncOf(a, clients, logger))
    // An older cidsync's publish of another namespace, replayed: refused once this device binds.
    write(b, ...ten)
    const replayed = await unboundPublish(clients, b, null, root)
    await clients.pointers.put({ snapshotCid: replayed, engine: 'cidsync-sqlite/2', namespace: 'ns-three', network: 'mainnet' })
    write(a, 'more.md')
    const error = await publish(syncOf(a, clients, logger)).catch((err: unknown) => err)
    expect(error).toBeInstanceOf(PointerUnreadableError)
    expect((error as Error).message).toMatch(/names no namespace/)
    expect(devicesIn(a)).toEqual([A])
    // An older cidsync of this namespace publishing on top of this device's publish: merged.
    write(e, 'theirs.md')
    const older = await unboundPublish(clients, e, mine.cid, root)
    await clients.pointers.put({ snapshotCid: older, engine: 'cidsync-sqlite/2', namespace: 'ns-three', network: 'mainnet' })
    const published = await publish(syncOf(a, clients, logger))
    expect(published).toMatchObject({ skipped: false, merged: 1 })
    expect(devicesIn(a).sort()).toEqual([A, E])
  })

  it('the pointer set back to this namespace\'s own publish from before the binding is taken as a rollback, not a replay', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'ns-five' })
    write(a, 'old.md')
    // What an older cidsync of this device published, then an upgraded one on top of it.
    const old = await unboundPublish(clients, a, null, root)
    await clients.pointers.put({ snapshotCid: old, engine: 'cidsync-sqlite/2', namespace: 'ns-five', network: 'mainnet' })
    write(a, 'new.md')
    const bound = await publish(syncOf(a, clients, logger))
    expect(bound).toMatchObject({ skipped: false, merged: 1, entries: 2 })
    await clients.pointers.put({ snapshotCid: old, engine: 'cidsync-sqlite/2', namespace: 'ns-five', network: 'mainnet' })
    const again = await publish(syncOf(a, clients, logger))
    expect(again).toMatchObject({ skipped: false, entries: 2 })
    expect((await clients.pointers.current('ns-five', 'mainnet')).snapshotCid).toBe(again.cid)
  })
})
