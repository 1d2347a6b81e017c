import { describe, expect, it } from 'vitest'
import { existsSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import pino from 'pino'
import { publish, Repository } from '../../src/sync/index.js'
import { directoryHome } from '../../src/store/index.js'
import { loadConfig } from '../../src/config/index.js'
import { EXTERNAL, serviceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { syncDevice, writeRows as write, syncOf } from '../helpers/sync-device.js'

const logger = pino({ level: 'silent' })
const A = 'aaaaaaaa-0000-4000-8000-000000000000'

describe.skipIf(EXTERNAL)('the repository: what a process reads a home through', () => {
  it('reads the passphrase once; gives read contexts bound to its namespace; opens each past index once; shares all with another home', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'repo-one' })
    write(a, 'first.md')
    const first = await publish(syncOf(a, clients, logger))

    const previous = process.env.CIDSYNC_SNAPSHOT_PASSPHRASE
    process.env.CIDSYNC_SNAPSHOT_PASSPHRASE = 'read at open'
    const repository = new Repository(a.config, clients, { store: a.store })
    try {
      process.env.CIDSYNC_SNAPSHOT_PASSPHRASE = 'changed later'
      expect(repository.passphrase).toBe('read at open')
      expect(repository.readContext('test')).toMatchObject({ passphrase: 'read at open', binding: { namespace: 'repo-one', network: a.config.network }, label: 'test' })
      const sibling = repository.other(directoryHome(join(root, 'usb')))
      expect(sibling.passphrase).toBe('read at open')
      expect(sibling.store).toBe(a.store)
      // Names and deals sit beside the objects on a service; a directory keeps neither.
      expect(repository.names).toBe(clients.names)
      expect(repository.deals).toBe(clients.deals)
      expect(sibling.names).toBeUndefined()
      expect(sibling.deals).toBeUndefined()
    } finally {
      if (previous === undefined) delete process.env.CIDSYNC_SNAPSHOT_PASSPHRASE
      else process.env.CIDSYNC_SNAPSHOT_PASSPHRASE = previous
    }

    const plain = new Repository(a.config, clients, { store: a.store, passphrase: undefined })
    try {
      const at = new Date()
      const once = await plain.pastIndex(at)
      expect(await plain.pastIndex(at)).toBe(once)
      expect(once.cid).toBe(first.cid)
      expect(once.index.entries.list({ deviceId: A }).map(e => e.path)).toEqual(['first.md'])
    } finally {
      await plain.close()
    }
    // The store it was given is its owner's: still open.
    expect(a.store.lastPublished()?.cid).toBe(first.cid)
  })

  it('on a state dir that never synced: no sync state until a read needs it; then manifests are kept for the next run', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    await writeFile(join(root, 'c.toml'), `state_dir = "${join(root, 'state')}"\n`)
    const config = loadConfig({ configPath: join(root, 'c.toml'), env: {} })
    const first = new Repository(config, clients, { passphrase: undefined })
    try {
      // A fallback to another home makes nothing either: `restore` must find no sync state yet.
      const sibling = first.other(directoryHome(join(root, 'usb')))
      await sibling.close()
      expect(existsSync(join(config.stateDir, 'sync.sqlite'))).toBe(false)
      first.manifestCache.put('bafy-test', '{}')
      expect(first.lastPublished()).toBeUndefined()
    } finally {
      await first.close()
    }
    const next = new Repository(config, clients, { passphrase: undefined })
    try {
      expect(next.manifestCache.get('bafy-test')).toBe('{}')
    } finally {
      await next.close()
    }
  })
})
