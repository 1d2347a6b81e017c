import { describe, expect, it, onTestFinished } from 'vitest'
import { spawnSync } from 'node:child_process'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok, shareKey, tree, writeSomeFiles } from './content-devices.js'

// Root mounts a small tmpfs as the target and fills it for real; anyone else cannot, and is told so.
const canMount = process.getuid?.() === 0 && spawnSync('mount', ['--version']).status === 0

if (!canMount) console.warn('content-disk-full: not root (or no mount): the full-disk restore test is skipped')

describe.skipIf(EXTERNAL)('a full disk while restoring files (processes)', () => {
  it.runIf(canMount)('says the disk is full and what to do, leaves no half-written file, and a rerun once there is room completes', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const a = await contentDevice(root, service, 'a')
    const b = await contentDevice(root, service, 'b')
    await shareKey(a, b)
    for (let i = 0; i < 3; i++) await writeSomeFiles(a.folder, `dir-${i}`, { largeBytes: 3 * 1024 * 1024 + i, small: 20 })
    await ok(a, ['snapshot'])
    await ok(b, ['restore'])
    const to = join(root, 'back')
    await mkdir(to)
    expect(spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=5m', 'tmpfs', to]).status).toBe(0)
    onTestFinished(() => { spawnSync('umount', ['-l', to]) })

    const full = await b.run(['restore', '--files', '--to', to])
    expect(full.code, full.stderr).toBe(1)
    // Which files miss out depends on the order fetches finish in: 9 MiB of large files on 5 MiB.
    const told = `: it did not fit: the disk (or quota) holding ${to} (or the state dir ${b.state}, where objects are fetched first) is full (ENOSPC): free some space and run again`
    const named = full.stderr.split('\n').filter((line) => line.includes(told))
    expect(named.some((line) => /notes\/dir-\d\/large\.bin: /.test(line)), full.stderr).toBe(true)
    // Each named, up to twenty; past that, the rest counted.
    const more = Number(/\.\.\. and (\d+) more not brought back/.exec(full.stderr)?.[1] ?? 0)
    expect(named.length).toBe(more > 0 ? 20 : named.length)
    expect(full.stderr).toMatch(new RegExp(`${named.length + more} files? (was|were) not brought back`))
    expect(full.stderr).toContain('[ERR_TARGET_DISK_FULL]')
    const want = await tree(a.folder)
    const got = await tree(join(to, 'notes'))
    expect(got.size).toBeGreaterThan(0)
    // What is there under a real name is whole; no temp file is left.
    for (const [path, sha] of got) expect(sha, path).toBe(want.get(path))

    expect(spawnSync('mount', ['-o', 'remount,size=64m', to]).status).toBe(0)
    const again = await ok(b, ['restore', '--files', '--to', to])
    expect(again.stdout).toContain(`already right`)
    expect(await tree(join(to, 'notes'))).toEqual(want)
  }, 300_000)
})
