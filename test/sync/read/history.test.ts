import { describe, it, expect } from 'vitest'
import pino from 'pino'
import { publish, publishAt, readContext, walkHistory, type ManifestCache } from '../../../src/sync/index.js'
import type { ObjectHome } from '../../../src/store/index.js'
import { EXTERNAL, serviceUnderTest } from '../../helpers/service.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { handClock } from '../../helpers/clock.js'
import { syncDevice, syncOf, writeRows as write } from '../../helpers/sync-device.js'

const logger = pino({ level: 'silent' })
const A = 'aaaaaaaa-0000-4000-8000-00000000000a'

/** The home with its fetches counted. */
function counted (home: ObjectHome): { home: ObjectHome, fetches: () => number } {
  let n = 0
  const objects = Object.create(home.objects) as ObjectHome['objects']
  objects.getFile = async (...args) => { n++; return await home.objects.getFile(...args) }
  return { home: { ...home, objects }, fetches: () => n }
}

describe.skipIf(EXTERNAL)('the publish at a time', () => {
  it('walks the cached chain for times and links alone, and reads whole only the publish it answers', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'history-at' })
    const clock = handClock()
    const made: string[] = []
    for (const name of ['one.md', 'two.md', 'three.md']) {
      write(a, name)
      made.push((await publish({ ...syncOf(a, clients, logger), clock })).cid)
      clock.move(3_600_000)
    }
    const rows = new Map<string, string>()
    const cache: ManifestCache = { get: cid => rows.get(cid), put: (cid, json) => { rows.set(cid, json) } }
    const init = readContext(a.config, { label: 'find', passphrase: undefined })
    for await (const _ of walkHistory(clients, made[2] as string, cache, init)) { /* cached */ }
    expect(rows.size).toBe(3)
    const firstAt = new Date(Date.parse(JSON.parse(rows.get(made[0] as string) as string).manifest.createdAt) + 1000)

    // The newest row holds its time and links but not the rest of a manifest: a walk past it fetches nothing.
    const newest = JSON.parse(rows.get(made[2] as string) as string)
    newest.manifest.devices = 'not a list'
    rows.set(made[2] as string, JSON.stringify(newest))
    const walk = counted(clients)
    const found = await publishAt(walk.home, made[2] as string, firstAt, cache, init)
    expect(found?.entry.cid).toBe(made[0])
    expect(found?.next?.cid).toBe(made[1])
    expect(found?.manifest?.devices.length).toBe(1)
    expect(walk.fetches()).toBe(0)

    // The publish answered is read whole: its damaged row is fetched again and checked.
    const oldest = JSON.parse(rows.get(made[0] as string) as string)
    oldest.manifest.devices = 'not a list'
    rows.set(made[0] as string, JSON.stringify(oldest))
    const again = counted(clients)
    expect((await publishAt(again.home, made[2] as string, firstAt, cache, init))?.manifest?.devices.length).toBe(1)
    expect(again.fetches()).toBe(1)
  })
})
