import { describe, it, expect } from 'vitest'
import { mkdir, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { checkSegment, indexPath, openIndex } from '../../../src/index/index.js'
import { exportKey, importKey } from '../../../src/snapshot/index.js'
import { serviceUnderTest, localServiceUnderTest, EXTERNAL } from '../../helpers/service.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { deadPid } from '../../helpers/dead-pid.js'
import { syncDevice, writeRows as write } from '../../helpers/sync-device.js'
import { handClock } from '../../helpers/clock.js'
import { chain, devicesOf, everything, manifestOf, pub, readIndex, restoreInto, restorer } from '../v2-helpers.js'

const A = 'aaaaaaaa-0000-4000-8000-000000000000'
const B = 'bbbbbbbb-0000-4000-8000-000000000000'
/** Deltas, never compaction by size (tiny bases would compact on every publish). */
const INCREMENTAL = 'deal = false\ncompact_after_deltas = 100\ncompact_fraction = 100\n'

describe('cidsync-sqlite/2: publish, change, publish, restore any point', () => {
  it('restore --at the first publish gives the first index exactly, the latest the latest; --cid a manifest gives that one', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const NS = 'v2-points'
    const a = await syncDevice(root, 'a', A, { namespace: NS, snapshot: INCREMENTAL })
    write(a, 'one.md', 'two.md', 'three.md')
    // The two publishes an hour apart, on a clock the test moves.
    const clock = handClock()
    const first = await pub(a, clients, a.config, clock)
    const atFirst = everything(a.index)
    clock.move(3_600_000)
    // A change, a new file and a deletion: the delta must carry the tombstone.
    a.index.entries.apply(a.id, [{ kind: 'upsert', folder: 'notes', path: 'one.md', size: 99, mtimeMs: 2, cid: 'cid-one-v2', cidProfile: 'kubo-cidv1' }])
    a.index.entries.apply(a.id, [{ kind: 'delete', folder: 'notes', path: 'two.md' }])
    write(a, 'four.md')
    const second = await pub(a, clients, a.config, clock)
    const atSecond = everything(a.index)
    expect(atSecond).not.toEqual(atFirst)

    const history = await chain(clients, a, second.cid)
    expect(history.map(h => h.entry.cid)).toEqual([second.cid, first.cid])
    expect(history.map(h => h.entry.previous)).toEqual([first.cid, null])
    // Each stamped with the test's clock, not the system's.
    expect(history.map(h => h.entry.at)).toEqual([new Date(clock.now()).toISOString(), new Date(clock.now() - 3_600_000).toISOString()])
    // The second publish added one delta of its own rows, nothing else.
    const m2 = history[0]?.manifest
    expect(m2?.devices).toHaveLength(1)
    expect(m2?.devices[0]?.segments.map(s => [s.kind, s.from, s.to])).toEqual([['base', 0, 3], ['delta', 3, 6]])
    expect(m2?.added).toHaveLength(1)
    expect(m2?.entries).toBe(3)

    const r = await restorer(root, 'r', a, NS)
    const old = await restoreInto(clients, r, NS, { at: new Date(history[1]?.entry.at as string) })
    expect(old.publish.cid).toBe(first.cid)
    expect(old.rows).toEqual(atFirst)
    // Between the two: still the first.
    const between = new Date((Date.parse(history[1]?.entry.at as string) + Date.parse(history[0]?.entry.at as string)) / 2)
    expect((await restoreInto(clients, r, NS, { at: between })).rows).toEqual(atFirst)
    const latest = await restoreInto(clients, r, NS, { at: new Date() })
    expect(latest.publish.cid).toBe(second.cid)
    expect(latest.rows).toEqual(atSecond)
    expect((await restoreInto(clients, r, NS, { cid: first.cid })).rows).toEqual(atFirst)
    expect((await restoreInto(clients, r, NS)).rows).toEqual(atSecond)
    // The restored index knows the lists: a device restored from it publishes deltas, not a new base of A.
    expect(readIndex(r.config, i => i.segments.chains().map(c => [c.deviceId, c.toSeq]))).toEqual([[A, 6]])
    // Nothing of the restores is left behind: no staged index, no fetched segment.
    expect((await readdir(r.config.stateDir)).filter(n => n.includes('restoring'))).toEqual([])
    expect(await readdir(join(r.config.stateDir, 'snapshots'))).toEqual([])
    // Installed in WAL, as every index is kept (its file format bytes say so before anyone opens it).
    const header = await readFile(indexPath(r.config.stateDir))
    expect([header[18], header[19]]).toEqual([2, 2])
    const { NothingAtTimeError } = await import('../../../src/errors.js')
    const err = await restoreInto(clients, r, NS, { at: new Date(Date.parse(history[1]?.entry.at as string) - 1) }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(NothingAtTimeError)
    expect(err).toMatchObject({ code: 'ERR_NOTHING_AT_TIME', exitCode: 3 })
  })

  it('two devices publishing in turns give one linear chain, and every device ends with every row', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const NS = 'v2-turns'
    const a = await syncDevice(root, 'a', A, { namespace: NS, snapshot: INCREMENTAL })
    const b = await syncDevice(root, 'b', B, { namespace: NS, snapshot: INCREMENTAL })
    importKey(b.config.stateDir, exportKey(a.config.stateDir))
    const cids: string[] = []
    for (let round = 0; round < 3; round++) {
      write(a, `a-${round}.md`)
      cids.push((await pub(a, clients)).cid)
      write(b, `b-${round}.md`)
      b.index.entries.apply(b.id, round > 0 ? [{ kind: 'delete', folder: 'notes', path: `b-${round - 1}.md` }] : [])
      cids.push((await pub(b, clients)).cid)
    }
    // A takes B's last rows (nothing of its own changed: a pull).
    await pub(a, clients)
    const history = await chain(clients, a, cids.at(-1) as string)
    expect(history.map(h => h.entry.cid)).toEqual([...cids].reverse())
    expect(history.map(h => h.entry.device)).toEqual([B, A, B, A, B, A])
    for (let i = 0; i < history.length - 1; i++) expect(history[i]?.entry.previous).toBe(history[i + 1]?.entry.cid)
    expect(everything(a.index)).toEqual(everything(b.index))
    expect(everything(a.index).filter(r => (r as unknown[])[6] === false).map(r => (r as unknown[])[2])).toEqual(['a-0.md', 'a-1.md', 'a-2.md', 'b-2.md'])
    const r = await restorer(root, 'r', a, NS)
    expect((await restoreInto(clients, r, NS)).rows).toEqual(everything(a.index))
    // Every publish after the first was incremental: one new segment each.
    expect(history.slice(0, -1).map(h => h.manifest?.added.length)).toEqual([1, 1, 1, 1, 1])
  })

  it('compaction happens after compact_after_deltas, and restores stay exact at every point across it', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const NS = 'v2-compact'
    const a = await syncDevice(root, 'a', A, { namespace: NS, snapshot: 'deal = false\ncompact_after_deltas = 2\ncompact_fraction = 100\n' })
    const points: Array<{ cid: string, rows: unknown[] }> = []
    for (let i = 0; i < 6; i++) {
      write(a, `f-${i}.md`)
      if (i > 1) a.index.entries.apply(a.id, [{ kind: 'delete', folder: 'notes', path: `f-${i - 2}.md` }])
      points.push({ cid: (await pub(a, clients)).cid, rows: everything(a.index) })
    }
    const kinds = (await chain(clients, a, points.at(-1)?.cid as string)).reverse().map(h => h.manifest?.devices[0]?.segments.map(s => s.kind).join(','))
    expect(kinds).toEqual(['base', 'base,delta', 'base,delta,delta', 'base', 'base,delta', 'base,delta,delta'])
    const m4 = await manifestOf(clients, a, points[3]?.cid as string)
    // The compacted base holds every row at its sequence, tombstones too (4 files, 2 of them deleted).
    expect(m4.devices[0]?.segments[0]).toMatchObject({ kind: 'base', from: 0, to: m4.devices[0]?.lastSeq, entries: 4 })
    const r = await restorer(root, 'r', a, NS)
    for (const [i, point] of points.entries()) expect((await restoreInto(clients, r, NS, { cid: point.cid })).rows, `point ${i}`).toEqual(point.rows)
  })
})

describe.skipIf(EXTERNAL)('merge', () => {
  it('fetches only the segments it lacks (gateway GETs counted)', async () => {
    const { clients, local } = await localServiceUnderTest()
    const root = await useTempDir()
    const NS = 'v2-merge'
    const a = await syncDevice(root, 'a', A, { namespace: NS, snapshot: INCREMENTAL })
    const b = await syncDevice(root, 'b', B, { namespace: NS, snapshot: INCREMENTAL })
    importKey(b.config.stateDir, exportKey(a.config.stateDir))
    const gets = (): number => local.requestLog().filter(r => r.route === 'gateway' && r.method === 'GET').length
    write(a, ...Array.from({ length: 50 }, (_, i) => `a-${i}.md`))
    await pub(a, clients)
    write(b, 'b.md')
    let before = gets()
    await pub(b, clients)
    // A's manifest and its base.
    expect(gets() - before).toBe(2)
    write(a, 'a-late.md')
    before = gets()
    await pub(a, clients)
    // A merges B's publish: its manifest and B's base (A's own base is not fetched).
    expect(gets() - before).toBe(2)
    write(a, 'a-later.md')
    await pub(a, clients)
    write(b, 'b-2.md')
    before = gets()
    await pub(b, clients)
    // B holds A's base: only A's manifest and A's two new deltas; and the manifest before A's, which
    // B never merged, read once to make its node of the plain root.
    expect(gets() - before).toBe(4)
    const aPaths = new Set(a.index.entries.list().map(e => `${e.deviceId}/${e.path}`))
    for (const p of aPaths) expect(b.index.entries.list().map(e => `${e.deviceId}/${e.path}`)).toContain(p)
  })

  it('a device whose index was rebuilt counts on from what others saw, writes a base and wins its rows back', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const NS = 'v2-rebuilt'
    const a = await syncDevice(root, 'a', A, { namespace: NS, snapshot: INCREMENTAL })
    const b = await syncDevice(root, 'b', B, { namespace: NS, snapshot: INCREMENTAL })
    importKey(b.config.stateDir, exportKey(a.config.stateDir))
    write(a, 'old-1.md', 'old-2.md', 'old-3.md', 'old-4.md')
    await pub(a, clients)
    write(b, 'b.md')
    await pub(b, clients)
    const seenBefore = (await manifestOf(clients, a, (await clients.pointers.current(NS, 'mainnet')).snapshotCid)).devices.find(d => d.deviceId === A)?.lastSeq as number
    expect(seenBefore).toBe(4)

    // A's index is lost and rebuilt from its folders: fewer files, sequences from 1 again.
    a.index.close()
    for (const suffix of ['', '-wal', '-shm']) await rm(`${indexPath(a.config.stateDir)}${suffix}`, { force: true })
    const rebuilt = openIndex(indexPath(a.config.stateDir))
    rebuilt.entries.registerDevice(A, 'a')
    const a2 = { ...a, index: rebuilt }
    write(a2, 'old-1.md', 'new.md')
    try {
      await pub(a2, clients)
      const pointer = (await clients.pointers.current(NS, 'mainnet')).snapshotCid
      const own = (await manifestOf(clients, a, pointer)).devices.find(d => d.deviceId === A)
      // A base past what others saw of A: their merge replaces A's rows whole.
      expect(own?.segments).toHaveLength(1)
      expect(own?.segments[0]).toMatchObject({ kind: 'base', from: 0 })
      expect(own?.lastSeq).toBeGreaterThan(seenBefore)
      await pub(b, clients)
      const aRowsAtB = b.index.entries.list({ deviceId: A }).map(e => e.path)
      expect(aRowsAtB).toEqual(['new.md', 'old-1.md'])
      expect(rebuilt.entries.list().map(e => `${e.deviceId.slice(0, 1)}/${e.path}`)).toEqual(['b/b.md', 'a/new.md', 'a/old-1.md'].sort((x, y) => x.slice(2).localeCompare(y.slice(2))))
      const r = await restorer(root, 'r', a, NS)
      const restored = await restoreInto(clients, r, NS)
      expect(restored.rows.filter(x => (x as unknown[])[0] === A && (x as unknown[])[6] === false).map(x => (x as unknown[])[2])).toEqual(['new.md', 'old-1.md'])
      expect(devicesOf(rebuilt)).toEqual(readIndex(r.config, devicesOf))
    } finally {
      rebuilt.close()
    }
  })
})

describe('a publish\'s segments describe one instant of the index', () => {
  // Found by this test: a yield between the plan and the rows let a rewrite move past `to`.
  it('a row rewritten while the segments are being written is in the base at its old sequence, not lost', async () => {
    const { writePublication } = await import('../../../src/sync/publish/publication.js')
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'v2-instant', snapshot: INCREMENTAL })
    write(a, 'one.md', 'two.md')
    const dir = join(root, 'out')
    await mkdir(dir)
    const made = writePublication({ index: a.index, self: A, previous: null, dir, label: 'p', policy: { afterDeltas: 100, fraction: 100 }, encryption: 'aes-256-gcm', stateDir: a.config.stateDir })
    // What the watcher does while the publish awaits: rewrite one.md (its sequence moves to 3).
    a.index.entries.apply(a.id, [{ kind: 'upsert', folder: 'notes', path: 'one.md', size: 7, mtimeMs: 2, cid: 'cid-one-v2', cidProfile: 'kubo-cidv1' }])
    const { manifest, files } = await made
    const base = manifest.devices[0]?.segments[0]
    expect(base).toMatchObject({ kind: 'base', from: 0, to: 2 })
    // Both files existed at sequence 2: a restore of this publish must have both, and can open it.
    expect(base?.entries).toBe(2)
    const { openSegment } = await import('../../../src/snapshot/index.js')
    await openSegment({ path: files[0]?.path as string, destination: join(dir, 'opened.sqlite'), name: 'base', stateDir: a.config.stateDir, expected: { deviceId: A, kind: 'base', from: 0, to: 2, entries: base?.entries ?? -1 }, check: (d) => { checkSegment(d, { deviceId: A, kind: 'base', from: 0, to: 2, entries: base?.entries ?? -1 }, 'base') } })
  })
})

describe('leftovers of killed cidsync-sqlite/2 jobs', () => {
  // A restore, merge, pull, verify or history killed midway leaves fetched segments (a base is
  // the size of a whole index) under names with its pid, and a publish killed while writing
  // leaves its segment databases.
  it('are removed at start, and the unfinished publish keeps every file it resumes from', async () => {
    const { prepareSyncState, SyncStore } = await import('../../../src/sync/index.js')
    const state = await useTempDir()
    const snapshots = join(state, 'snapshots')
    await mkdir(snapshots)
    const store = new SyncStore(state)
    const job = store.start(null)
    const files = [`publish-${job.id}-0-aaaaaaaa-000-7.seg`, `publish-${job.id}-0.manifest`].map(n => ({ path: join(snapshots, n), cid: 'bafy', bytes: 10 }))
    store.snapshotted(job, { snapshotPath: files[1]?.path as string, snapshotCid: 'bafy', marker: '[]', entries: 0, files, manifest: '{}' })
    store.close()
    // Named by a process that ran and is gone: a live one's files are kept.
    const dead = await deadPid()
    const cid16 = 'abcdefghij234567'
    const ours = [`restore-${dead}-${cid16}.seg`, `restore-${dead}-${cid16}.sqlite`, `restore-${dead}-${cid16}.sqlite.${dead}.unseal`, `merge-7-${dead}-${cid16}.sqlite`,
      `pull-${dead}-${cid16}.seg`, `verify-${dead}.sqlite`, `verify-${dead}-${cid16}.sqlite`, `history-${dead}-${cid16}.read`, `restore-${dead}-${cid16}.manifest.json`,
      `publish-${job.id - 1}-0-aaaaaaaa-000-3.sqlite`, `publish-${job.id - 1}-0-aaaaaaaa-000-3.seg.${dead}.part`, `publish-${job.id - 1}-1.manifest`]
    const kept = files.map(f => f.path.split('/').at(-1) as string).concat(['my-notes.txt'])
    for (const name of [...ours, ...kept]) await writeFile(join(snapshots, name), 'x'.repeat(10))
    // A drill's and a history read's names go a day on: from another PID namespace, a running one looks gone.
    const fresh = `verify-${dead}-${cid16}.read`
    await writeFile(join(snapshots, fresh), 'x')
    const dayAndHour = new Date(Date.now() - 25 * 60 * 60_000)
    for (const name of ours.filter(n => /^(verify|history)-/.test(n))) await utimes(join(snapshots, name), dayAndHour, dayAndHour)
    kept.push(fresh)
    const prepared = await prepareSyncState(state)
    prepared.store.close()
    expect((await readdir(snapshots)).sort()).toEqual(kept.sort())
  })
})
