import { describe, expect, it } from 'vitest'
import { spawnSync } from 'node:child_process'
import { chmod, lstat, mkdir, readFile, rm, utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { CLI, runCli } from '../helpers/cli.js'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok, shareKey } from './content-devices.js'

// Root opens any directory; a user cannot open one without read permission to fsync it.
const NOBODY = 65534
const unprivilegedCanRunCli = process.getuid?.() === 0 &&
  spawnSync(process.execPath, ['-e', `require('fs').accessSync(${JSON.stringify(CLI)}, require('fs').constants.R_OK)`], { uid: NOBODY, gid: NOBODY }).status === 0

describe.runIf(unprivilegedCanRunCli && !EXTERNAL)('restore --files as a user, not root (processes)', () => {
  it('a directory recorded without read permission (0311) ends so, with its files in it; a read-only one refused later says what to do', async () => {
    const root = await useTempDir()
    await chmod(root, 0o755)
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const a = await contentDevice(root, service, 'a')
    const b = await contentDevice(root, service, 'b')
    await mkdir(join(a.folder, 'drop', 'deeper'), { recursive: true })
    await writeFile(join(a.folder, 'drop', 'in.txt'), 'written through a directory no one may list')
    await writeFile(join(a.folder, 'drop', 'deeper', 'low.txt'), 'one level down')
    await chmod(join(a.folder, 'drop', 'deeper'), 0o300)
    await chmod(join(a.folder, 'drop'), 0o311)
    await utimes(join(a.folder, 'drop'), 1_600_000_000, 1_600_000_000)
    await mkdir(join(a.folder, 'ro'))
    await writeFile(join(a.folder, 'ro', 'kept.txt'), 'read only')
    await chmod(join(a.folder, 'ro'), 0o555)
    await ok(a, ['snapshot'])
    await shareKey(a, b)
    await ok(b, ['restore'])
    const to = join(root, 'as-user')
    await mkdir(to)
    spawnSync('chown', ['-R', `${NOBODY}:${NOBODY}`, join(root, 'b'), b.config, to])
    const asUser = async (path: string): Promise<Awaited<ReturnType<typeof runCli>>> => await runCli(['restore', '--files', path, '--to', to, '--config', b.config], { env: b.env, uid: NOBODY, gid: NOBODY, timeoutMs: 120_000 })
    const restored = await asUser('notes')
    expect(restored.code, restored.stderr).toBe(0)
    expect(restored.stdout).toMatch(/3 files written/)
    const drop = join(to, 'notes', 'drop')
    expect((await lstat(drop)).mode & 0o7777).toBe(0o311)
    expect((await lstat(join(drop, 'deeper'))).mode & 0o7777).toBe(0o300)
    expect((await lstat(drop)).mtimeMs).toBe(1_600_000_000_000)
    expect(await readFile(join(drop, 'in.txt'), 'utf8')).toBe('written through a directory no one may list')
    expect(await readFile(join(drop, 'deeper', 'low.txt'), 'utf8')).toBe('one level down')
    // A file gone from the read-only directory: this user may not put it back, and is told why.
    const ro = join(to, 'notes', 'ro')
    await chmod(ro, 0o755)
    await rm(join(ro, 'kept.txt'))
    await chmod(ro, 0o555)
    const again = await asUser('notes/ro')
    expect(again.code, again.stderr).toBe(1)
    expect(again.stderr).toContain(`notes/ro/kept.txt: ${ro} does not let this user write into it (EACCES): make it writable (chmod u+w), or restore as its owner or as root [EACCES]`)
    expect(again.stdout).toMatch(/0 files written, 0 already right/)
  })
})
