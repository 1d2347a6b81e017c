import { describe, it, expect } from 'vitest'
import { chmodSync, mkdirSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { openIndex } from '../../src/index/index.js'
import { scanFolder } from '../../src/watch/scan.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { bound, until, within } from '../helpers/wait.js'

const DEVICE = '00000000-0000-4000-8000-000000000001'
const PROFILE = 'kubo-cidv1'

/** Files at these paths under `root`, each with its own bytes. */
function makeFiles (root: string, paths: readonly string[]): void {
  for (const path of paths) {
    mkdirSync(join(root, path, '..'), { recursive: true })
    writeFileSync(join(root, path), `file ${path}`)
  }
}

const request = (root: string, indexPath: string) => ({
  root, folder: 'notes', ignore: [], exclude: [], followSymlinks: false, indexPath, deviceId: DEVICE, profile: PROFILE
})

describe('the startup scan', () => {
  it('meets every row as it walks, whatever the names sort as, across pages of rows', async () => {
    const dir = await useTempDir()
    const root = join(dir, 'notes')
    // Names whose order differs between UTF-16 and UTF-8 (U+E000 against a character past U+FFFF),
    // and names beside a directory that sort before or after its slash; then enough files that
    // the rows are read in several pages.
    const odd = ['a.txt', 'a/b.txt', 'a b/c', 'a-/x', 'a0', '\uE000.txt', '\u{1F600}.txt', 'z/\uE000/y', 'z/\u{1F600}/y', 'Z']
    const many = Array.from({ length: 4_500 }, (_, i) => `d${i % 3}/f${i}`)
    makeFiles(root, [...odd, ...many, 'changed.txt'])
    const index = openIndex(join(dir, 'index.sqlite'))
    index.entries.registerDevice(DEVICE, 'here')
    const row = (path: string) => {
      const stats = statSync(join(root, path))
      return { kind: 'upsert' as const, folder: 'notes', path, size: stats.size, mtimeMs: stats.mtimeMs, cid: `cid-${path}`, cidProfile: PROFILE }
    }
    index.entries.apply(DEVICE, [...odd, ...many].map(row))
    index.entries.apply(DEVICE, [{ ...row('changed.txt'), size: 1 }, { ...row('a0'), path: 'a/gone' }, { ...row('a0'), path: 'zz-gone' }])
    index.close()

    const changed: string[] = []
    const result = await within(scanFolder(request(root, join(dir, 'index.sqlite')), {
      onChanged: files => { for (const [path] of files) changed.push(path) },
      onUnreadable: () => {}
    }), 30_000, 'the scan')
    expect(changed).toEqual(['changed.txt'])
    expect([...result.missing].sort()).toEqual(['a/gone', 'zz-gone'])
    expect(result.scanned).toBe(odd.length + many.length + 1)
  })

  it('sends no more files than the main thread has room for, then the rest', async () => {
    const dir = await useTempDir()
    const root = join(dir, 'notes')
    makeFiles(root, Array.from({ length: 12_000 }, (_, i) => `d${i % 4}/f${i}`))
    let open: () => void = () => {}
    const room = new Promise<void>(resolve => { open = resolve })
    let batches = 0
    let files = 0
    let dirs = 0
    const scanning = scanFolder(request(root, join(dir, 'absent.sqlite')), {
      onChanged: batch => { batches++; files += batch.length },
      // Directories' rows ride in the same batches: they are written without hashing.
      onDescribed: described => { dirs += described.length },
      onUnreadable: () => {}
    }, { room: async () => { await room } })
    // Two batches go ahead of any room; the walk then waits, however many files are left.
    await until(() => batches >= 2 ? true : undefined, 10_000, 'the first two batches')
    await new Promise(resolve => setTimeout(resolve, Math.min(bound(250), 2_000)))
    expect(batches).toBe(2)
    // Two batches of the scan thread's 500 entries.
    expect(files + dirs).toBe(1_000)
    open()
    const result = await within(scanning, 30_000, 'the rest of the scan')
    expect(files).toBe(12_000)
    expect(dirs).toBe(4)
    expect(result).toEqual({ scanned: 12_000, missing: [] })
  })

  it('a scan thread that fails is a coded ScanFailedError saying the folder is not fully indexed', async () => {
    const dir = await useTempDir()
    const root = join(dir, 'notes')
    makeFiles(root, ['a.txt'])
    // An index that is not a database: the thread cannot read its rows.
    writeFileSync(join(dir, 'index.sqlite'), 'not a database, not at all '.repeat(200))
    const failed = await within(scanFolder(request(root, join(dir, 'index.sqlite')), { onChanged: () => {}, onUnreadable: () => {} }).then(() => undefined, (err: unknown) => err), 30_000, 'the scan')
    expect(failed).toMatchObject({ code: 'ERR_SCAN_FAILED', exitCode: 1 })
    expect((failed as Error).message).toMatch(/^the scan of .* failed: .*: the folder is not fully indexed; fix that and restart the daemon, which scans it again$/)
  })

  it('walks a small folder on this thread when allowed, telling what a thread tells; a larger one on a thread, whole', async () => {
    const dir = await useTempDir()
    const root = join(dir, 'notes')
    makeFiles(root, [...Array.from({ length: 30 }, (_, i) => `d${i % 3}/f${i}`), 'kept.txt', 'changed.txt'])
    mkdirSync(join(root, 'locked'))
    writeFileSync(join(root, 'locked', 'inside'), 'x')
    const index = openIndex(join(dir, 'index.sqlite'))
    index.entries.registerDevice(DEVICE, 'here')
    const row = (path: string, size?: number) => {
      const stats = statSync(join(root, path))
      return { kind: 'upsert' as const, folder: 'notes', path, size: size ?? stats.size, mtimeMs: stats.mtimeMs, cid: `cid-${path}`, cidProfile: PROFILE }
    }
    index.entries.apply(DEVICE, [row('kept.txt'), row('changed.txt', 1), { ...row('kept.txt'), path: 'gone.txt' }])
    index.close()
    const unreadable = process.getuid?.() !== 0
    if (unreadable) chmodSync(join(root, 'locked'), 0o000)
    const run = async (inlineEntries?: number) => {
      const told: string[] = []
      const result = await within(scanFolder(request(root, join(dir, 'index.sqlite')), {
        onChanged: (files, scanned) => { told.push(...files.map(([path, size]) => `changed ${path} ${size} (${scanned})`)) },
        onDescribed: entries => { told.push(...entries.map(e => `described ${e[0]} ${e[5]}`)) },
        onUnreadable: (path, code) => { told.push(`unreadable ${path} ${code}`) }
      }, inlineEntries === undefined ? {} : { inlineEntries }), 30_000, 'the scan')
      return { told, result }
    }
    try {
      const onThread = await run()
      expect(onThread.result.missing).toEqual(['gone.txt'])
      expect(onThread.told.filter(t => t.startsWith('changed changed.txt'))).toHaveLength(1)
      // The same words, in the same order, from the walk here; and from a thread once the folder is past the bound.
      expect(await run(100)).toEqual(onThread)
      expect(await run(10)).toEqual(onThread)
    } finally {
      if (unreadable) chmodSync(join(root, 'locked'), 0o700)
    }
  })

  it('a walk on this thread that fails is the same ScanFailedError', async () => {
    const dir = await useTempDir()
    const root = join(dir, 'notes')
    makeFiles(root, ['a.txt'])
    writeFileSync(join(dir, 'index.sqlite'), 'not a database, not at all '.repeat(200))
    const failed = await scanFolder(request(root, join(dir, 'index.sqlite')), { onChanged: () => {}, onUnreadable: () => {} }, { inlineEntries: 100 }).then(() => undefined, (err: unknown) => err)
    expect(failed).toMatchObject({ code: 'ERR_SCAN_FAILED', exitCode: 1 })
    expect((failed as Error).message).toMatch(/^the scan of .* failed: .*: the folder is not fully indexed; fix that and restart the daemon, which scans it again$/)
  })
})
