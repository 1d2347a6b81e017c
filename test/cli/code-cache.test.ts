import { chmodSync, chownSync, readdirSync, realpathSync, readFileSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { mkdir, writeFile } from 'node:fs/promises'
import { createHash } from 'node:crypto'
import { join } from 'node:path'
import { tmpdir } from 'node:os'
import { describe, expect, it } from 'vitest'
import { codeCacheDir } from '../../src/cli/code-cache.js'
import { onUserMount } from '../../src/cli/code-cache-dir.js'
import { DaemonProcess, runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

/** A command (`restore --help` unless told: it loads a command's module), with the code cache in `dir`. */
async function run (dir: string, args = ['restore', '--help'], extra: NodeJS.ProcessEnv = {}): Promise<{ code: number | null, stdout: string, stderr: string }> {
  return await runCli(args, { env: { ...process.env, CIDSYNC_CODE_CACHE: dir, ...extra } })
}

const cacheFiles = (dir: string): string[] => readdirSync(dir).filter(name => name.endsWith('.v8'))

/** A cache file as the CLI writes it: its code after the SHA-256 of that code. */
function wellFormed (path: string): boolean {
  const bytes = readFileSync(path)
  return bytes.length > 1024 && createHash('sha256').update(bytes.subarray(32)).digest().equals(bytes.subarray(0, 32))
}

/** Root takes no cache from a nosuid or FUSE mount: where the temp dir is on one, the tests that need a cache kept cannot run. */
const keepsCaches = !(process.getuid?.() === 0 && onUserMount(realpathSync(tmpdir())))

describe.skipIf(!keepsCaches)('the CLI\'s code cache (src/cli/code-cache.ts)', () => {
  it('is kept after the first run, private, and read by the next without being written again', async () => {
    const dir = join(await useTempDir(), 'cache')
    // --version compiles next to nothing: it reads a cache, it keeps none.
    expect((await run(dir, ['--version'])).code).toBe(0)
    expect(cacheFiles(dir)).toEqual([])
    const first = await run(dir)
    expect(first.code).toBe(0)
    const [file] = cacheFiles(dir)
    expect(file).toMatch(/^cidsync-[0-9a-f]{32}-[0-9a-f]{8}-v\d+\.\d+\.\d+-\w+\.v8$/)
    const path = join(dir, file as string)
    expect(statSync(dir).mode & 0o777).toBe(0o700)
    expect(statSync(path).mode & 0o777).toBe(0o600)
    const written = statSync(path)
    // Taken by V8: not made again (a refused cache would be replaced by a new file).
    const second = await run(dir)
    expect(second).toEqual(first)
    expect(statSync(path).ino).toBe(written.ino)
    expect(readdirSync(dir).filter(name => name.endsWith('.tmp'))).toEqual([])
  })

  it('a damaged cache, or one V8 refuses, is never run: the command answers the same and the cache is made again', async () => {
    const dir = join(await useTempDir(), 'cache')
    const clean = await run(dir)
    const path = join(dir, cacheFiles(dir)[0] as string)
    const good = readFileSync(path)
    expect(wellFormed(path)).toBe(true)
    // One byte flipped in the code: its digest no longer matches.
    const flipped = Buffer.from(good)
    flipped[flipped.length >> 1] = (flipped[flipped.length >> 1] as number) ^ 0xff
    writeFileSync(path, flipped, { mode: 0o600 })
    expect(await run(dir)).toEqual(clean)
    expect(wellFormed(path)).toBe(true)
    // Garbage under a digest that matches it: V8's own check refuses it.
    const garbage = Buffer.alloc(4096, 7)
    writeFileSync(path, Buffer.concat([createHash('sha256').update(garbage).digest(), garbage]), { mode: 0o600 })
    expect(await run(dir)).toEqual(clean)
    expect(readFileSync(path).length).toBeGreaterThan(garbage.length + 32)
    expect(wellFormed(path)).toBe(true)
    // Cut short, as a crash might leave it.
    writeFileSync(path, good.subarray(0, 20), { mode: 0o600 })
    expect(await run(dir)).toEqual(clean)
    expect(wellFormed(path)).toBe(true)
  })

  it('is neither read nor written where another could write: a directory open to the group, a file open to others', async () => {
    const dir = join(await useTempDir(), 'cache')
    const clean = await run(dir)
    const path = join(dir, cacheFiles(dir)[0] as string)
    const garbage = Buffer.alloc(4096, 9)
    const planted = Buffer.concat([createHash('sha256').update(garbage).digest(), garbage])
    writeFileSync(path, planted)
    chmodSync(path, 0o666)
    expect(await run(dir)).toEqual(clean)
    // Not trusted; the directory is this user's own, so a private cache takes its place.
    expect(readFileSync(path).equals(planted)).toBe(false)
    expect(statSync(path).mode & 0o777).toBe(0o600)
    chmodSync(dir, 0o770)
    writeFileSync(path, planted)
    chmodSync(path, 0o600)
    expect(await run(dir)).toEqual(clean)
    // Nor written, in a directory others may write to.
    expect(readFileSync(path).equals(planted)).toBe(true)
  })

  it('keeps one cache per set of node options (a unit\'s NODE_OPTIONS), each taken by V8 in turn', async () => {
    const dir = join(await useTempDir(), 'cache')
    const plain = await run(dir)
    const unit = async (): Promise<unknown> => await run(dir, undefined, { NODE_OPTIONS: '--max-semi-space-size=1' })
    expect(await unit()).toEqual(await run(dir))
    const files = cacheFiles(dir)
    expect(files).toHaveLength(2)
    const inodes = files.map(name => statSync(join(dir, name)).ino)
    expect(await run(dir)).toEqual(plain)
    await unit()
    expect(cacheFiles(dir).map(name => statSync(join(dir, name)).ino)).toEqual(inodes)
  })

  it('the daemon, which sets V8 flags of its own once it runs, keeps a cache its next start takes', async () => {
    const root = await useTempDir()
    const dir = join(root, 'cache')
    await mkdir(join(root, 'notes'))
    await writeFile(join(root, 'notes', 'a.md'), 'a')
    await writeFile(join(root, 'c.toml'), 'state_dir = "state"\n[[folders]]\nname = "notes"\npath = "notes"\n[status]\nlisten = "127.0.0.1:0"\n')
    // As its units run it.
    const env = { ...process.env, CIDSYNC_CODE_CACHE: dir, NODE_OPTIONS: '--max-semi-space-size=1' }
    const once = async (): Promise<void> => {
      const daemon = new DaemonProcess(['--config', join(root, 'c.toml')], { env })
      await daemon.logged('index current')
      expect((await daemon.stop()).code).toBe(0)
    }
    await once()
    const [file] = cacheFiles(dir)
    expect(wellFormed(join(dir, file as string))).toBe(true)
    const written = statSync(join(dir, file as string)).ino
    await once()
    expect(cacheFiles(dir)).toEqual([file])
    expect(statSync(join(dir, file as string)).ino).toBe(written)
  })

  it('keeps the four newest caches (two installs side by side keep theirs), and removes what killed writes left; CIDSYNC_CODE_CACHE=0 keeps none', async () => {
    const dir = join(await useTempDir(), 'cache')
    await run(dir)
    const mine = cacheFiles(dir)[0] as string
    const others = [1, 2, 3, 4].map(n => `cidsync-${String(n).repeat(32)}-00000000-${process.version}-${process.arch}.v8`)
    others.forEach((name, n) => {
      writeFileSync(join(dir, name), 'another build', { mode: 0o600 })
      utimesSync(join(dir, name), new Date(Date.now() - (n + 1) * 60_000), new Date(Date.now() - (n + 1) * 60_000))
    })
    // A killed write's temp file (its pid gone), and a live one's (this test's own pid).
    const dead = spawnSync(process.execPath, ['-e', 'console.log(process.pid)'], { encoding: 'utf8' }).stdout.trim()
    writeFileSync(join(dir, `.${dead}.1.tmp`), 'cut', { mode: 0o600 })
    writeFileSync(join(dir, `.${process.pid}.1.tmp`), 'writing', { mode: 0o600 })
    writeFileSync(join(dir, mine), 'damaged', { mode: 0o600 })
    await run(dir)
    expect(cacheFiles(dir).sort()).toEqual([mine, ...others.slice(0, 3)].sort())
    expect(readdirSync(dir).filter(name => name.endsWith('.tmp'))).toEqual([`.${process.pid}.1.tmp`])
    const off = await useTempDir()
    expect((await run('0', undefined, { XDG_CACHE_HOME: off })).code).toBe(0)
    expect(readdirSync(off)).toEqual([])
  })

  it('is not used where another user could change the way to it: a directory above it of theirs, or open to others\' writes without the sticky bit', async () => {
    const root = await useTempDir()
    const clean = await run(join(root, 'plain'))
    // Open to the group's writes, two levels up.
    await mkdir(join(root, 'shared', 'mine'), { recursive: true })
    chmodSync(join(root, 'shared'), 0o775)
    expect(await run(join(root, 'shared', 'mine', 'cache'))).toEqual(clean)
    expect(readdirSync(join(root, 'shared', 'mine'))).toEqual([])
    // Sticky and open to all, as /tmp: others may add names there, never move this user's.
    await mkdir(join(root, 'sticky'))
    chmodSync(join(root, 'sticky'), 0o1777)
    await run(join(root, 'sticky', 'cache'))
    expect(cacheFiles(join(root, 'sticky', 'cache'))).toHaveLength(1)
    // Reached through a symbolic link into a directory open to others: judged where it leads.
    await mkdir(join(root, 'open'))
    chmodSync(join(root, 'open'), 0o777)
    symlinkSync(join(root, 'open'), join(root, 'link'))
    expect(await run(join(root, 'link', 'cache'))).toEqual(clean)
    expect(readdirSync(join(root, 'open'))).toEqual([])
    if (process.getuid?.() === 0) {
      // Another user's directory on the way (root run with another user's HOME).
      await mkdir(join(root, 'theirs', 'cache'), { recursive: true, mode: 0o755 })
      chownSync(join(root, 'theirs'), 65534, 65534)
      expect(await run(join(root, 'theirs', 'cache'))).toEqual(clean)
      expect(readdirSync(join(root, 'theirs', 'cache'))).toEqual([])
    }
  })

  it('ends a command as usual where no directory can be made (under /proc), and a file in the way is no cache', async () => {
    const started = Date.now()
    const under = await run('/proc/cidsync-cache-test/cidsync')
    expect(under.code).toBe(0)
    expect(Date.now() - started).toBeLessThan(15_000)
    const file = join(await useTempDir(), 'file')
    writeFileSync(file, 'x')
    expect((await run(file)).code).toBe(0)
    expect(readFileSync(file, 'utf8')).toBe('x')
  })

  it('with --enable-source-maps runs the bundle through node\'s own loader, whose stack traces name the source', async () => {
    const root = await useTempDir()
    const dir = join(root, 'cache')
    writeFileSync(join(root, 'c.toml'), 'state_dir = "state"\n')
    // An unexpected failure inside the config's loading, to see its stack.
    writeFileSync(join(root, 'boom.cjs'), "const cwd = process.cwd; process.cwd = function () { if ((new Error().stack ?? '').includes('findConfigFile')) throw new Error('boom'); return cwd.call(process) }\n")
    const failed = await runCli(['ls', '--config', 'c.toml'], { cwd: root, env: { ...process.env, CIDSYNC_CODE_CACHE: dir, CIDSYNC_DEBUG: '1', NODE_OPTIONS: `--enable-source-maps --require ${join(root, 'boom.cjs')}` } })
    expect(failed.code).not.toBe(0)
    expect(failed.stderr).toContain('boom')
    expect(failed.stderr).toMatch(/src\/config\/load\.ts:\d+/)
  })

})

describe('where the code cache lives, and where root takes none (src/cli/code-cache-dir.ts)', () => {
  it('is not taken by root from a filesystem whose owners a user may have written (nosuid, FUSE)', () => {
    const mountinfo = [
      '22 27 0:21 / / rw,relatime - ext4 /dev/vda1 rw',
      '30 22 0:40 / /media/mallory/STICK rw,nosuid,nodev,relatime - ext4 /dev/loop0 rw',
      '31 22 0:41 / /home/mallory rw,relatime - fuse.sshfs mallory@host: rw,user_id=1000',
      '32 22 0:42 / /mnt/with\\040space rw,nosuid - tmpfs tmpfs rw',
      '33 30 0:43 / /media/mallory/STICK/inner rw,relatime - ext4 /dev/loop1 rw'
    ].join('\n')
    expect(onUserMount('/root/.cache/cidsync', mountinfo)).toBe(false)
    expect(onUserMount('/media/mallory/STICK/cidsync', mountinfo)).toBe(true)
    expect(onUserMount('/media/mallory/STICKY/cidsync', mountinfo)).toBe(false)
    expect(onUserMount('/home/mallory/.cache/cidsync', mountinfo)).toBe(true)
    expect(onUserMount('/mnt/with space/c', mountinfo)).toBe(true)
    // The deepest mount decides.
    expect(onUserMount('/media/mallory/STICK/inner/c', mountinfo)).toBe(false)
  })

  it('lives in $XDG_CACHE_HOME/cidsync, else ~/.cache/cidsync', () => {
    expect(codeCacheDir({ XDG_CACHE_HOME: '/x/cache', HOME: '/home/u' })).toBe('/x/cache/cidsync')
    expect(codeCacheDir({ CIDSYNC_CODE_CACHE: '/c' })).toBe('/c')
    expect(codeCacheDir({ CIDSYNC_CODE_CACHE: '0', XDG_CACHE_HOME: '/x' })).toBeUndefined()
    // The system unit's CacheDirectory=cidsync; another unit's cache directory is not cidsync's.
    expect(codeCacheDir({ CACHE_DIRECTORY: '/var/cache/cidsync', XDG_CACHE_HOME: '/x' })).toBe('/var/cache/cidsync')
    expect(codeCacheDir({ CACHE_DIRECTORY: '/var/cache/other:/var/cache/cidsync' })).toBe('/var/cache/cidsync')
    expect(codeCacheDir({ CACHE_DIRECTORY: '/var/cache/otherapp', XDG_CACHE_HOME: '/x' })).toBe('/x/cidsync')
    // Relative paths follow the working directory: not taken.
    expect(codeCacheDir({ CIDSYNC_CODE_CACHE: 'rel', XDG_CACHE_HOME: '/x' })).toBe('/x/cidsync')
    // A relative XDG_CACHE_HOME is ignored, as the XDG spec says.
    expect(codeCacheDir({ XDG_CACHE_HOME: 'rel' })).toMatch(/\/\.cache\/cidsync$/)
  })
})
