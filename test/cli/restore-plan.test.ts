import { describe, expect, it } from 'vitest'
import { lstat, lutimes, mkdir, readFile, readdir, symlink, writeFile } from 'node:fs/promises'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok, shareKey, type ContentDevice } from './content-devices.js'

/** Device a's tree, made by `fill`, published; device b with its key and its index, ready to restore files. */
async function publishedTo (fill: (folder: string) => Promise<void>): Promise<{ root: string, b: ContentDevice }> {
  const root = await useTempDir()
  const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
  const a = await contentDevice(root, service, 'a')
  const b = await contentDevice(root, service, 'b')
  await fill(a.folder)
  await ok(a, ['snapshot'])
  await shareKey(a, b)
  await ok(b, ['restore'])
  return { root, b }
}

describe.skipIf(EXTERNAL)('restore --files --dry-run says what the run does (processes)', () => {
  it('names as blocked what is in the way of a file, --overwrite or not, and the run fails just those', async () => {
    const { root, b } = await publishedTo(async (folder) => {
      await mkdir(join(folder, 'sub'))
      await writeFile(join(folder, 'sub', 'inner.txt'), 'inner')
      await writeFile(join(folder, 'run.sh'), 'echo run')
      await writeFile(join(folder, 'plain.txt'), 'plain')
      await symlink('plain.txt', join(folder, 'link'))
    })
    // In the way: a symlink where a directory goes, a directory where a file goes.
    const to = join(root, 'to')
    const elsewhere = join(root, 'elsewhere')
    await mkdir(elsewhere)
    await mkdir(join(to, 'notes', 'run.sh'), { recursive: true })
    await symlink(elsewhere, join(to, 'notes', 'sub'))
    await mkdir(join(to, 'notes', 'link'))
    for (const overwrite of [[], ['--overwrite']]) {
      const plan = await ok(b, ['restore', '--files', 'notes', '--to', to, '--dry-run', ...overwrite])
      expect(plan.stdout).toMatch(/^blocked +notes\/run\.sh {2}\(not a regular file\)$/m)
      expect(plan.stdout).toMatch(/^blocked +notes\/sub\/inner\.txt {2}\(.*sub is a symlink: nothing is written through it\)$/m)
      expect(plan.stdout).toMatch(/^blocked +notes\/sub\/ {2}\(a symlink\)$/m)
      expect(plan.stdout).toMatch(/^write +notes\/plain\.txt$/m)
      expect(plan.stdout).toMatch(/^blocked +notes\/link {2}\(a directory\)$/m)
      expect(plan.stdout).toMatch(/fail 4 \(something in the way it never replaces: move it aside\)/)
    }
    const run = await b.run(['restore', '--files', 'notes', '--to', to, '--overwrite'])
    expect(run.code, run.stderr).toBe(1)
    expect(run.stderr).toMatch(/notes\/run\.sh: .*not a regular file/)
    expect(run.stderr).toMatch(/notes\/sub\/inner\.txt: .*symlink/)
    expect(run.stderr).toMatch(/notes\/link: /)
    expect(run.stderr).toMatch(/4 entries were not brought back/)
    expect(await readdir(elsewhere)).toEqual([])
  }, 120_000)

  it('--delete under --to removes nothing through a folder directory that is a symlink, as writes refuse it', async () => {
    const { root, b } = await publishedTo(async (folder) => {
      await writeFile(join(folder, 'plain.txt'), 'plain')
    })
    const to = join(root, 'to')
    const elsewhere = join(root, 'elsewhere')
    await mkdir(elsewhere)
    await mkdir(to)
    await writeFile(join(elsewhere, 'victim.txt'), 'not the restore\'s')
    await symlink(elsewhere, join(to, 'notes'))
    for (const dryRun of [['--dry-run'], []]) {
      const run = await b.run(['restore', '--files', 'notes', '--to', to, '--delete', ...dryRun])
      expect(run.code, run.stderr).not.toBe(0)
      expect(run.stderr).toMatch(/notes is a symlink: --delete removes nothing through it, and nothing was removed/)
      expect(run.stdout).not.toMatch(/victim/)
    }
    expect(await readdir(elsewhere)).toEqual(['victim.txt'])
  }, 120_000)

  it('--delete that cannot remove an entry: every file back, the entry named with why, exit 1 as ERR_NOT_DELETED', async () => {
    const { root, b } = await publishedTo(async (folder) => {
      await writeFile(join(folder, 'plain.txt'), 'plain')
    })
    const to = join(root, 'to')
    await mkdir(join(to, 'notes'), { recursive: true })
    const stuck = join(to, 'notes', 'stuck.txt')
    await writeFile(stuck, 'immutable')
    // An immutable file: even root may not remove it. A filesystem without the flag skips this test.
    if (spawnSync('chattr', ['+i', stuck]).status !== 0) return
    try {
      const run = await b.run(['restore', '--files', 'notes', '--to', to, '--delete', '--overwrite'])
      expect(run.code, run.stderr).toBe(1)
      expect(run.stderr).toMatch(/cidsync: notes\/stuck\.txt: not deleted: the system refused \(EPERM\): an immutable or append-only file \(lsattr\)/)
      expect(run.stderr).not.toContain('/proc/self/fd')
      expect(run.stderr).toContain('--delete could not remove 1 local entry the restored tree does not have (each named above); every file was brought back [ERR_NOT_DELETED]')
      expect(run.stdout).toContain('1 file written')
      expect(run.stdout).not.toMatch(/not brought back/)
      const json = await b.run(['restore', '--files', 'notes', '--to', to, '--delete', '--overwrite', '--json'])
      expect(json.code).toBe(1)
      const summary = JSON.parse(json.stdout.trim().split('\n').at(-1) as string) as { files: { failed: number }, deletion: unknown }
      expect(summary.files.failed).toBe(0)
      expect(summary.deletion).toEqual({ deleted: 0, kept: 0, failed: 1 })
    } finally {
      spawnSync('chattr', ['-i', stuck])
    }
    expect(await readFile(join(to, 'notes', 'plain.txt'), 'utf8')).toBe('plain')
  }, 120_000)

  it('a symlink with the right target and another mtime is made again, and the dry run says so', async () => {
    const { root, b } = await publishedTo(async (folder) => {
      await writeFile(join(folder, 'file.txt'), 'file')
      await symlink('file.txt', join(folder, 'link'))
      await lutimes(join(folder, 'link'), 1_600_000_000, 1_600_000_000)
    })
    const to = join(root, 'to')
    await ok(b, ['restore', '--files', 'notes', '--to', to])
    const link = join(to, 'notes', 'link')
    expect((await lstat(link)).mtimeMs).toBe(1_600_000_000_000)
    await lutimes(link, 1_700_000_000, 1_700_000_000)
    const plan = await ok(b, ['restore', '--files', 'notes', '--to', to, '--dry-run'])
    expect(plan.stdout).toMatch(/^replace +notes\/link {2}\(its mtime differs\)$/m)
    await ok(b, ['restore', '--files', 'notes', '--to', to])
    expect((await lstat(link)).mtimeMs).toBe(1_600_000_000_000)
    expect(await ok(b, ['restore', '--files', 'notes', '--to', to, '--dry-run']).then(r => r.stdout)).not.toMatch(/notes\/link/)
  }, 120_000)
})

