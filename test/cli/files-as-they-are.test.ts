import { describe, expect, it } from 'vitest'
import { execFileSync } from 'node:child_process'
import { chmod, chown, lchown, link, lstat, mkdir, readdir, readFile, readlink, rename, rm, symlink, truncate, writeFile } from 'node:fs/promises'
import { join, relative } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok, shareKey } from './content-devices.js'

interface Seen { type: string, mode: number, uid: number, gid: number, mtimeUs: number, target: string | null, nlink: number }

/** What `stat` says of every entry under `dir` (what `rsync -aH` keeps), by its path from there. */
async function statTree (dir: string): Promise<Record<string, Seen>> {
  const out: Record<string, Seen> = {}
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name)
    const s = await lstat(path)
    const type = s.isSymbolicLink() ? 'symlink' : s.isDirectory() ? 'dir' : s.isFile() ? 'file' : 'special'
    out[relative(dir, path)] = {
      type,
      // A symlink's own mode is 0777 everywhere on Linux and cannot be set.
      mode: s.mode & 0o7777,
      uid: s.uid,
      gid: s.gid,
      mtimeUs: Math.round(s.mtimeMs * 1000),
      target: s.isSymbolicLink() ? await readlink(path) : null,
      nlink: type === 'dir' ? 0 : s.nlink
    }
  }
  return out
}

/** A tree of every kind: modes, setuid, symlinks of each sort, empty and private directories, hard links, a FIFO. */
async function everyKind (root: string): Promise<void> {
  await mkdir(join(root, 'bin'), { recursive: true })
  await mkdir(join(root, 'empty'))
  await mkdir(join(root, 'private'))
  await writeFile(join(root, 'plain.txt'), 'plain')
  await writeFile(join(root, 'private', 'key'), 'secret')
  await writeFile(join(root, 'bin', 'run.sh'), '#!/bin/sh\necho run\n')
  await writeFile(join(root, 'bin', 'setuid'), 'setuid')
  await writeFile(join(root, 'own.txt'), 'only mine')
  await chmod(join(root, 'plain.txt'), 0o644)
  await chmod(join(root, 'private', 'key'), 0o600)
  await chmod(join(root, 'private'), 0o700)
  await chmod(join(root, 'bin', 'run.sh'), 0o755)
  await chmod(join(root, 'bin', 'setuid'), 0o4755)
  await chmod(join(root, 'own.txt'), 0o700)
  await symlink('plain.txt', join(root, 'relative-link'))
  await symlink('/etc/hostname', join(root, 'absolute-link'))
  await symlink('nowhere', join(root, 'dangling-link'))
  await symlink('bin', join(root, 'dir-link'))
  await symlink('loop-link', join(root, 'loop-link'))
  await writeFile(join(root, 'hard-1'), 'one content, two names')
  await link(join(root, 'hard-1'), join(root, 'hard-2'))
  execFileSync('mkfifo', [join(root, 'pipe')])
  // As root, owners other than the restoring user's: kept by name (or number) on the other device.
  if (process.getuid?.() === 0) {
    await chown(join(root, 'own.txt'), 65534, 65534)
    await lchown(join(root, 'relative-link'), 65534, 65534)
    await chown(join(root, 'private'), 65534, 65534)
  }
}

describe.skipIf(EXTERNAL)('files as they are, across two devices (processes)', () => {
  it('restore --files on a second device gives the same stat of every entry: type, mode, owner, mtime, link target, link count', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const a = await contentDevice(root, service, 'a')
    const b = await contentDevice(root, service, 'b')
    await shareKey(a, b)
    await everyKind(a.folder)
    const published = await ok(a, ['snapshot'])
    expect(published.stderr).not.toContain('pipe')
    await ok(b, ['restore'])
    const to = join(root, 'back')
    const restored = await ok(b, ['restore', '--files', '--to', to])
    expect(restored.stdout).toContain('5 symlinks and 3 directories in place')
    // A link out of the tree is kept as written, and said.
    expect(restored.stderr).toContain('notes/absolute-link -> /etc/hostname')
    const before = await statTree(a.folder)
    delete before.pipe
    const after = await statTree(join(to, 'notes'))
    const restoredAsIs = structuredClone(after)
    // The index keeps mtimes as milliseconds in a double: to within a microsecond.
    for (const [path, seen] of Object.entries(after)) {
      const was = before[path]
      if (was !== undefined && Math.abs(was.mtimeUs - seen.mtimeUs) <= 1) seen.mtimeUs = was.mtimeUs
    }
    expect(after).toEqual(before)
    // The FIFO is listed with why, not lost silently.
    const status = await ok(a, ['ls'])
    expect(status.stdout).not.toContain('notes/pipe')
    // Nothing restored is ever wider than recorded: the private key never left 0600.
    expect((await lstat(join(to, 'notes', 'private', 'key'))).mode & 0o777).toBe(0o600)
    // Two rows a window: hard links, directories and modes come back the same across windows.
    // The same rows give the same microsecond, so the two restores match exactly.
    const windowed = join(root, 'windowed')
    await ok(b, ['restore', '--files', '--to', windowed], { CIDSYNC_TEST_RESTORE_WINDOW: '2' })
    expect(await statTree(join(windowed, 'notes'))).toEqual(restoredAsIs)
  }, 300_000)

  it('after another device edits, deletes and renames, restore --files gives its tree (newest wins) and says which paths it took from it', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const a = await contentDevice(root, service, 'a')
    const b = await contentDevice(root, service, 'b')
    await shareKey(a, b)
    for (const name of ['edit-1.txt', 'edit-2.txt', 'delete.txt', 'rename.txt', 'same.txt']) await writeFile(join(a.folder, name), `first ${name}`)
    await ok(a, ['snapshot'])
    // B takes A's tree into its own folder and indexes it: it now holds rows of its own for the same paths.
    await ok(b, ['restore'])
    await ok(b, ['restore', '--files'])
    await ok(b, ['snapshot'])
    // A edits two files, deletes one and renames one.
    await writeFile(join(a.folder, 'edit-1.txt'), 'second edit-1')
    await writeFile(join(a.folder, 'edit-2.txt'), 'second edit-2, longer')
    await rm(join(a.folder, 'delete.txt'))
    await rename(join(a.folder, 'rename.txt'), join(a.folder, 'renamed.txt'))
    await ok(a, ['snapshot'])
    await ok(b, ['restore', '--force'])

    // A deleted file asked for by name: what brings it back, and from when.
    const gone = await b.run(['restore', '--files', 'notes/delete.txt'])
    expect(gone.code).toBe(3)
    expect(gone.stderr).toMatch(/"notes\/delete\.txt" was deleted \(last on device \w{8}, [^)]+\): `cidsync restore --files notes\/delete\.txt --at \S+Z --config \S+` brings back what the last publish before then held; `cidsync log notes\/delete\.txt --config \S+` lists every version/)
    // With --delete, its deletion is what the run does.
    expect((await ok(b, ['restore', '--files', 'notes/delete.txt', '--delete', '--dry-run'])).stdout).toMatch(/^delete +notes\/delete\.txt$/m)
    const at = /--at (\S+Z) /.exec(gone.stderr)?.[1] as string
    await ok(b, ['restore', '--files', 'notes/delete.txt', '--at', at, '--to', join(root, 'before-delete')])
    expect(await readFile(join(root, 'before-delete', 'notes', 'delete.txt'), 'utf8')).toBe('first delete.txt')

    const plan = await ok(b, ['restore', '--files', '--delete', '--dry-run'])
    expect(plan.stdout).toMatch(/^replace +notes\/edit-1\.txt$/m)
    expect(plan.stdout).toMatch(/^write +notes\/renamed\.txt$/m)
    expect(plan.stdout).toMatch(/^delete +notes\/delete\.txt$/m)
    expect(plan.stdout).toMatch(/^delete +notes\/rename\.txt$/m)
    // Counted as the lines name them: entries, not only files.
    expect(plan.stdout).toMatch(/^entries: would write 1, replace 2, keep 1 as they are, .*, delete 2; nothing was changed$/m)
    expect(plan.stdout).toContain('nothing was changed')
    expect(await readFile(join(b.folder, 'edit-1.txt'), 'utf8')).toBe('first edit-1.txt')

    // Without --delete, the two paths A no longer has are kept, named and counted as still here.
    const keepPlan = await ok(b, ['restore', '--files', '--dry-run'])
    expect(keepPlan.stdout).toMatch(/^keep +notes\/delete\.txt +\(the index holds it as deleted: --delete removes it\)$/m)
    expect(keepPlan.stdout).toContain(', keep 2 the index holds as deleted (--delete removes them); nothing was changed')
    const planLines = (await ok(b, ['restore', '--files', '--dry-run', '--json'])).stdout.trim().split('\n').map(l => JSON.parse(l) as { type: string, path: string, action: string, reason?: string, would?: Record<string, number> })
    expect(planLines.filter(l => l.type === 'plan' && l.action === 'keep' && l.reason?.includes('deleted') === true).map(l => l.path)).toEqual(['notes/delete.txt', 'notes/rename.txt'])
    // The last line counts the plan, as a run's summary counts what it did.
    expect(planLines.at(-1)).toMatchObject({ type: 'summary', dryRun: true, would: { 'deleted-kept': 2, delete: 0 } })
    const keeping = await ok(b, ['restore', '--files'])
    expect(keeping.stdout).toContain('2 paths the index holds as deleted are still at the target: kept (--delete removes them)')
    expect(keeping.stderr).toMatch(/^  notes\/delete\.txt$/m)
    expect(keeping.stderr).toMatch(/^  notes\/rename\.txt$/m)
    expect(await readFile(join(b.folder, 'delete.txt'), 'utf8')).toBe('first delete.txt')
    const keptLines = (await ok(b, ['restore', '--files', '--json'])).stdout.split('\n').filter(l => l.includes('"deleted-kept"'))
    expect(keptLines.map(l => JSON.parse(l) as unknown)).toEqual([{ type: 'deleted-kept', path: 'notes/delete.txt' }, { type: 'deleted-kept', path: 'notes/rename.txt' }])
    // Into an empty directory none of them is there: nothing is said of them.
    const fresh = await ok(b, ['restore', '--files', '--to', join(root, 'fresh')])
    expect(fresh.stdout).not.toContain('deleted')
    expect(await readdir(join(root, 'fresh', 'notes'))).not.toContain('delete.txt')
    // A sparse terabyte where a file was: with --overwrite, planned and replaced unread.
    await truncate(join(root, 'fresh', 'notes', 'same.txt'), 1024 ** 4)
    expect((await ok(b, ['restore', '--files', '--to', join(root, 'fresh'), '--dry-run', '--overwrite'])).stdout).toMatch(/^replace +notes\/same\.txt$/m)
    await ok(b, ['restore', '--files', '--to', join(root, 'fresh'), '--overwrite'])
    expect(await readFile(join(root, 'fresh', 'notes', 'same.txt'), 'utf8')).toBe('first same.txt')

    // A file made on b and never published, and one edited on b since (a deleted it): --delete
    // keeps both, as no other device had their bytes, and says so; the plan too.
    await writeFile(join(b.folder, 'mine.txt'), 'made here, never published')
    await writeFile(join(b.folder, 'rename.txt'), 'edited on b, never published')
    const keepPlan2 = (await ok(b, ['restore', '--files', '--delete', '--dry-run'])).stdout
    expect(keepPlan2).toMatch(/^keep +notes\/mine\.txt {2}\(no other device had it as it is: kept; --delete --overwrite removes it\)$/m)
    expect(keepPlan2).toMatch(/^keep +notes\/rename\.txt {2}\(no other device had it/m)
    expect(keepPlan2).toMatch(/^delete +notes\/delete\.txt$/m)
    const run = await ok(b, ['restore', '--files', '--delete'])
    expect(run.stderr).toContain('--delete kept 2 local entries no other device had as they are (made or changed here; --delete --overwrite removes them):\n  notes/mine.txt\n  notes/rename.txt\n')
    expect(run.stdout).toContain('2 local entries kept, no other device having them as they are (--delete --overwrite removes them)')
    expect(await readFile(join(b.folder, 'mine.txt'), 'utf8')).toBe('made here, never published')
    expect(await readFile(join(b.folder, 'rename.txt'), 'utf8')).toBe('edited on b, never published')
    expect(run.stderr).toMatch(/paths? differs? between devices/)
    expect(run.stderr).toMatch(/notes\/edit-1\.txt: from device \w{8}/)
    // What a publish holds as it is goes: a's deletion arrives.
    expect(run.stdout).toContain('1 local entry deleted (--delete)')
    expect(run.stderr).toContain('--delete removed 1 local entry the restored tree does not have:\n  notes/delete.txt\n')
    const files = async (dir: string): Promise<Record<string, string>> => Object.fromEntries(await Promise.all((await readdir(dir)).sort().map(async n => [n, await readFile(join(dir, n), 'utf8')])))
    // With --overwrite, --delete makes the folder the tree exactly.
    const exact = await ok(b, ['restore', '--files', '--delete', '--overwrite', '--json'])
    expect(exact.stdout).toContain('{"type":"deleted","path":"notes/mine.txt","outcome":"deleted"}')
    expect(exact.stdout).toContain('{"type":"deleted","path":"notes/rename.txt","outcome":"deleted"}')
    // The summary counts what --delete removed and kept, beside the files.
    expect(JSON.parse(exact.stdout.trim().split('\n').at(-1) as string)).toMatchObject({ type: 'summary', deletion: { deleted: 2, kept: 0 } })
    expect(await files(b.folder)).toEqual(await files(a.folder))

    // One device's tree exactly, with --device.
    const aId = (await readFile(join(a.state, 'device-id'), 'utf8')).trim()
    await ok(b, ['restore', '--files', '--to', join(root, 'as-a'), '--device', aId])
    expect(await files(join(root, 'as-a', 'notes'))).toEqual(await files(a.folder))
  }, 300_000)
  it('a hard link whose first name holds the user\'s own file: that one is kept, the next name fetched, the others linked to it', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const a = await contentDevice(root, service, 'a')
    const b = await contentDevice(root, service, 'b')
    await shareKey(a, b)
    await writeFile(join(a.folder, 'hard-1'), 'one content, three names')
    await link(join(a.folder, 'hard-1'), join(a.folder, 'hard-2'))
    await link(join(a.folder, 'hard-1'), join(a.folder, 'hard-3'))
    await ok(a, ['snapshot'])
    await ok(b, ['restore'])
    const to = join(root, 'back')
    // The first two names hold files no publish has: both are kept, and the third is fetched.
    await mkdir(join(to, 'notes'), { recursive: true })
    await writeFile(join(to, 'notes', 'hard-1'), 'mine')
    await writeFile(join(to, 'notes', 'hard-2'), 'mine too')
    const restored = await b.run(['restore', '--files', '--to', to, '--json'])
    const lines = restored.stdout.trim().split('\n').map(l => JSON.parse(l) as { type: string, path?: string, outcome?: string })
    const outcomes = Object.fromEntries(lines.filter(l => l.type === 'file').map(l => [l.path, l.outcome]))
    expect(outcomes).toEqual({ 'notes/hard-1': 'kept-different', 'notes/hard-2': 'kept-different', 'notes/hard-3': 'written' })
    expect(await readFile(join(to, 'notes', 'hard-1'), 'utf8')).toBe('mine')
    expect(await readFile(join(to, 'notes', 'hard-2'), 'utf8')).toBe('mine too')
    expect(await readFile(join(to, 'notes', 'hard-3'), 'utf8')).toBe('one content, three names')
    // With --overwrite the group is one file again, of three names.
    await ok(b, ['restore', '--files', '--to', to, '--overwrite'])
    const [one, two, three] = await Promise.all(['hard-1', 'hard-2', 'hard-3'].map(async n => await lstat(join(to, 'notes', n))))
    expect([one?.ino, two?.ino, one?.nlink]).toEqual([three?.ino, three?.ino, 3])
    expect(await readFile(join(to, 'notes', 'hard-1'), 'utf8')).toBe('one content, three names')
  }, 300_000)
})
