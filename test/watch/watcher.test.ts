import { describe, it, expect, afterEach } from 'vitest'
import { mkdir, writeFile, rename, rm, utimes, symlink } from 'node:fs/promises'
import { join } from 'node:path'
import pino from 'pino'
import { openIndex, type Index } from '../../src/index/index.js'
import { createWatcher, type Watcher } from '../../src/watch/index.js'
import { bytesCid, cidProfile } from '../../src/content/index.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { within, until } from '../helpers/wait.js'

const DEVICE = '00000000-0000-4000-8000-000000000001'
const profile = cidProfile('kubo-cidv1')
const cidOf = (text: string): string => bytesCid(Buffer.from(text), profile).toString()

interface Harness { root: string, index: Index, watcher: Watcher }
const open: Harness[] = []

afterEach(async () => {
  for (const h of open.splice(0)) {
    await h.watcher.stop()
    h.index.close()
  }
})

async function startWatching (dir: string, ignore: string[] = ['.git/**', '*.tmp'], followSymlinks = false): Promise<Harness> {
  const root = join(dir, 'notes')
  await mkdir(root, { recursive: true })
  const index = openIndex(join(dir, 'state', 'index.sqlite'))
  const watcher = createWatcher({ index, logger: pino({ level: 'silent' }), deviceId: DEVICE }, {
    folders: [{ name: 'notes', path: root, ignore, followSymlinks }],
    profile: 'kubo-cidv1',
    hashWorkers: 2,
    settleMs: 50
  })
  const harness = { root, index, watcher }
  open.push(harness)
  await within(watcher.start(), 10_000, 'the watcher to start')
  await within(watcher.current(), 10_000, 'the index to be current')
  return harness
}

async function stopWatching (h: Harness): Promise<void> {
  open.splice(open.indexOf(h), 1)
  await h.watcher.stop()
  h.index.close()
}

const live = (h: Harness): Record<string, string | null> =>
  Object.fromEntries(h.index.entries.list({ deviceId: DEVICE }).map(e => [e.path, e.cid]))

async function settled (h: Harness, expected: Record<string, string | null>): Promise<void> {
  await until(async () => {
    await h.watcher.current()
    return JSON.stringify(live(h)) === JSON.stringify(expected) ? true : undefined
  }, 10_000, `the index to hold ${JSON.stringify(expected)}`)
}

describe('watching a folder', () => {
  it('indexes existing files on start, each with the CID ipfs add gives it', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes', 'sub'), { recursive: true })
    await writeFile(join(dir, 'notes', 'a.md'), 'alpha')
    await writeFile(join(dir, 'notes', 'sub', 'b.md'), 'beta')
    const h = await startWatching(dir)
    expect(live(h)).toEqual({ 'a.md': cidOf('alpha'), 'sub/b.md': cidOf('beta') })
    const entry = h.index.entries.get(DEVICE, 'notes', 'a.md')
    expect(entry).toMatchObject({ size: 5, cidProfile: 'kubo-cidv1', deleted: false })
  })

  it('follows creates, modifications and deletes as they happen', async () => {
    const dir = await useTempDir()
    const h = await startWatching(dir)
    await writeFile(join(h.root, 'new.md'), 'one')
    await settled(h, { 'new.md': cidOf('one') })
    const firstSeq = h.index.entries.get(DEVICE, 'notes', 'new.md')?.seq ?? 0
    await writeFile(join(h.root, 'new.md'), 'two, longer')
    await settled(h, { 'new.md': cidOf('two, longer') })
    expect(h.index.entries.get(DEVICE, 'notes', 'new.md')?.seq).toBeGreaterThan(firstSeq)
    await rm(join(h.root, 'new.md'))
    await settled(h, {})
    expect(h.index.entries.get(DEVICE, 'notes', 'new.md')).toMatchObject({ deleted: true })
  })

  it('sees an editor\'s atomic save (write temp, rename over) as one change of the file', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'), { recursive: true })
    await writeFile(join(dir, 'notes', 'doc.md'), 'draft')
    const h = await startWatching(dir)
    const before = h.index.entries.get(DEVICE, 'notes', 'doc.md')?.seq ?? 0
    await writeFile(join(h.root, '.doc.md.swx'), 'final text')
    await rename(join(h.root, '.doc.md.swx'), join(h.root, 'doc.md'))
    await settled(h, { 'doc.md': cidOf('final text') })
    const all = h.index.entries.list({ deviceId: DEVICE, includeDeleted: true })
    expect(all.map(e => e.path)).toEqual(['doc.md'])
    expect(all[0]?.seq).toBe(before + 1)
  })

  it('records a rename as the old path deleted and the new one present', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'), { recursive: true })
    await writeFile(join(dir, 'notes', 'old.md'), 'content')
    const h = await startWatching(dir)
    await rename(join(h.root, 'old.md'), join(h.root, 'renamed.md'))
    await settled(h, { 'renamed.md': cidOf('content') })
    expect(h.index.entries.get(DEVICE, 'notes', 'old.md')).toMatchObject({ deleted: true })
  })

  it('records a file replaced by a directory of the same name as deleted, and the directory\'s files present', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'), { recursive: true })
    await writeFile(join(dir, 'notes', 'x'), 'a')
    const h = await startWatching(dir)
    await rm(join(h.root, 'x'))
    await mkdir(join(h.root, 'x'))
    await writeFile(join(h.root, 'x', 'y'), 'b')
    await settled(h, { 'x/y': cidOf('b') })
    expect(h.index.entries.get(DEVICE, 'notes', 'x')).toMatchObject({ deleted: true })
  })

  it('follows folders made, moved in and removed', async () => {
    const dir = await useTempDir()
    const h = await startWatching(dir)
    await mkdir(join(h.root, 'made', 'deep'), { recursive: true })
    await writeFile(join(h.root, 'made', 'deep', 'x.md'), 'x')
    await settled(h, { 'made/deep/x.md': cidOf('x') })
    await mkdir(join(dir, 'outside'))
    await writeFile(join(dir, 'outside', 'y.md'), 'y')
    await rename(join(dir, 'outside'), join(h.root, 'moved'))
    await settled(h, { 'made/deep/x.md': cidOf('x'), 'moved/y.md': cidOf('y') })
    await rm(join(h.root, 'made'), { recursive: true })
    await settled(h, { 'moved/y.md': cidOf('y') })
  })

  it('never indexes ignored paths, at start or live', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes', '.git', 'objects'), { recursive: true })
    await writeFile(join(dir, 'notes', '.git', 'objects', 'pack'), 'git data')
    await writeFile(join(dir, 'notes', 'scratch.tmp'), 'tmp')
    await writeFile(join(dir, 'notes', 'kept.md'), 'kept')
    const h = await startWatching(dir)
    await writeFile(join(h.root, '.git', 'HEAD'), 'ref')
    await writeFile(join(h.root, 'more.tmp'), 'tmp')
    await writeFile(join(h.root, 'also.md'), 'also')
    await settled(h, { 'also.md': cidOf('also'), 'kept.md': cidOf('kept') })
  })

  it('hashes nothing on a restart over unchanged files, and catches up on what changed while down', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'), { recursive: true })
    for (let i = 0; i < 50; i++) await writeFile(join(dir, 'notes', `f${i}.md`), `file ${i}`)
    const first = await startWatching(dir)
    expect(first.watcher.status().folders[0]?.hashed).toBe(50)
    await stopWatching(first)

    const second = await startWatching(dir)
    expect(second.watcher.status().folders[0]).toMatchObject({ scanned: 50, hashed: 0 })
    await stopWatching(second)

    await writeFile(join(dir, 'notes', 'f1.md'), 'changed while down')
    await utimes(join(dir, 'notes', 'f2.md'), new Date(), new Date(2001, 1, 1))
    await rm(join(dir, 'notes', 'f3.md'))
    await writeFile(join(dir, 'notes', 'new.md'), 'new')
    const third = await startWatching(dir)
    expect(third.watcher.status().folders[0]).toMatchObject({ hashed: 3 })
    const rows = live(third)
    expect(rows['f1.md']).toBe(cidOf('changed while down'))
    expect(rows['f2.md']).toBe(cidOf('file 2'))
    expect(rows['new.md']).toBe(cidOf('new'))
    expect(rows).not.toHaveProperty('f3.md')
    expect(Object.keys(rows)).toHaveLength(50)
  })

  it('indexes symlinks as links (target, not content) unless told to follow them, then indexes what they point to', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'elsewhere', 'deep'), { recursive: true })
    await writeFile(join(dir, 'elsewhere', 'target.md'), 'target')
    await writeFile(join(dir, 'elsewhere', 'deep', 'inner.md'), 'inner')
    await mkdir(join(dir, 'notes'), { recursive: true })
    await writeFile(join(dir, 'notes', 'real.md'), 'real')
    await symlink(join(dir, 'elsewhere', 'target.md'), join(dir, 'notes', 'file-link.md'))
    await symlink(join(dir, 'elsewhere', 'deep'), join(dir, 'notes', 'dir-link'))
    const skipping = await startWatching(dir)
    expect(live(skipping)).toEqual({ 'dir-link': null, 'file-link.md': null, 'real.md': cidOf('real') })
    const link = skipping.index.entries.get(DEVICE, 'notes', 'file-link.md')
    expect(link?.meta).toMatchObject({ kind: 'symlink', target: join(dir, 'elsewhere', 'target.md') })
    expect(skipping.index.entries.get(DEVICE, 'notes', 'dir-link')?.meta).toMatchObject({ kind: 'symlink', target: join(dir, 'elsewhere', 'deep') })
    expect(skipping.index.entries.get(DEVICE, 'notes', 'real.md')?.meta).toMatchObject({ kind: 'file', mode: 0o644 & ~process.umask() })
    await stopWatching(skipping)
    const following = await startWatching(dir, [], true)
    expect(live(following)).toEqual({ 'dir-link/inner.md': cidOf('inner'), 'file-link.md': cidOf('target'), 'real.md': cidOf('real') })
  })

  it('stops at once in the middle of a startup scan, and the next start finishes it', async () => {
    const dir = await useTempDir()
    const root = join(dir, 'notes')
    for (let d = 0; d < 20; d++) {
      await mkdir(join(root, `d${d}`), { recursive: true })
      await Promise.all(Array.from({ length: 100 }, async (_, i) => { await writeFile(join(root, `d${d}`, `f${i}`), `${d}/${i}`) }))
    }
    const index = openIndex(join(dir, 'state', 'index.sqlite'))
    const watcher = createWatcher({ index, logger: pino({ level: 'silent' }), deviceId: DEVICE }, {
      folders: [{ name: 'notes', path: root, ignore: [], followSymlinks: false }], profile: 'kubo-cidv1', hashWorkers: 2, settleMs: 50
    })
    const starting = watcher.start().catch(() => undefined)
    // Stop once the scan has begun finding files, well before it is done.
    const midway = await until(() => {
      const status = watcher.status()
      const folder = status.folders[0]
      return folder !== undefined && folder.scanned + folder.hashed > 0 ? status : undefined
    }, 10_000, 'the scan to begin', 1)
    expect(midway.state).toBe('scanning')
    expect(midway.currentAt).toBeUndefined()
    await within(watcher.stop(), 5_000, 'the watcher to stop mid-scan')
    await within(starting, 5_000, 'the interrupted start to settle')
    expect(watcher.status().currentAt).toBeUndefined()
    // What was committed before the stop is a part of the folder, not all of it.
    const committed = index.entries.list({ deviceId: DEVICE }).filter(e => !e.deleted).length
    expect(committed).toBeLessThan(2_000)
    index.close()
    const again = await startWatching(dir, [])
    expect(Object.keys(live(again))).toHaveLength(2_000)
  })
})
