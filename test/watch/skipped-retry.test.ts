import { describe, it, expect } from 'vitest'
import { chmod, chown, mkdir, readFile, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { spawnSync } from 'node:child_process'
import { DaemonProcess, runCli, CLI } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'
import { httpGet } from '../helpers/http.js'
import type { StatusDocument } from '../../src/daemon/index.js'
import { writeTestConfig } from '../helpers/config-file.js'

// Root reads every file, so permissions only bite an unprivileged daemon, which must be able to
// reach the built CLI (a checkout under a private dir cannot).
const NOBODY = 65534
/** The state dir is the daemon's user's: the CLI runs as that user too. */
const AS_NOBODY = { uid: NOBODY, gid: NOBODY }
const unprivilegedCanRunCli = process.getuid?.() === 0 &&
  spawnSync(process.execPath, ['-e', `require('fs').accessSync(${JSON.stringify(CLI)}, require('fs').constants.R_OK)`], { uid: NOBODY, gid: NOBODY }).status === 0

/** Straight from the endpoint (a CLI process per poll would cost a second each). */
async function status (config: string): Promise<StatusDocument> {
  const info = JSON.parse(await readFile(join(dirname(config), 'state', 'daemon.json'), 'utf8')) as { status: string }
  const answer = await httpGet({ port: Number(info.status.split(':').pop()) }, '/status')
  return JSON.parse(answer.body) as StatusDocument
}

describe.runIf(unprivilegedCanRunCli)('skipped files, with an unprivileged daemon', () => {
  it('retries an unreadable file and directory until they can be read, listing each with why meanwhile', async () => {
    const dir = await useTempDir()
    await chmod(dir, 0o755)
    const notes = join(dir, 'notes')
    await mkdir(join(notes, 'private'), { recursive: true })
    await writeFile(join(notes, 'hello.txt'), 'hello')
    await writeFile(join(notes, 'secret.txt'), 'secret')
    await writeFile(join(notes, 'private', 'inside.txt'), 'inside')
    await chmod(join(notes, 'secret.txt'), 0o600)
    await chmod(join(notes, 'private'), 0o700)
    await mkdir(join(dir, 'state'), { mode: 0o700 })
    await chown(join(dir, 'state'), NOBODY, NOBODY)
    const config = await writeTestConfig(dir, { log_level: 'info' })

    const daemon = new DaemonProcess(['--config', config], AS_NOBODY)
    expect(await daemon.logged('index current')).toMatchObject({ files: 1 })
    const before = await until(async () => {
      const s = await status(config)
      return s.folders[0]?.skippedFiles.length === 2 ? s : undefined
    }, 10_000, 'both skipped paths to be listed')
    expect(before.filesSkipped).toBe(2)
    const listed = Object.fromEntries((before.folders[0]?.skippedFiles ?? []).map(f => [f.path, f]))
    expect(listed.private).toMatchObject({ kind: 'dir', reason: 'EACCES', since: expect.any(String), nextRetryAt: expect.any(String) })
    expect(listed['secret.txt']).toMatchObject({ kind: 'file', reason: 'EACCES' })

    // Fixed by hand: both reach the index without a restart and leave the list.
    await chmod(join(notes, 'private'), 0o755)
    await chmod(join(notes, 'secret.txt'), 0o644)
    const after = await until(async () => {
      const s = await status(config)
      return s.index.files === 3 && s.filesSkipped === 0 ? s : undefined
    }, 15_000, 'the fixed file and directory to be indexed')
    expect(after.folders[0]?.skippedFiles).toEqual([])
    const ls = await runCli(['ls', '--config', config], AS_NOBODY)
    expect(ls.stdout).toContain('notes/private/inside.txt')
    expect(ls.stdout).toContain('notes/secret.txt')
    expect(daemon.stderr.split('\n').filter(l => l.includes('skipped: it could not be read'))).toHaveLength(2)
    // Watched again too: a file made in it now is indexed live.
    await writeFile(join(notes, 'private', 'new.txt'), 'made after the fix')
    await until(async () => (await status(config)).index.files === 4 ? true : undefined, 10_000, 'a new file in the fixed directory to be indexed')
    expect(before.folders[0]?.state).toBe('watching')

    // A directory that turns unreadable is not a delete: its rows stay, listed as skipped.
    await chmod(join(notes, 'private'), 0o700)
    const rescan = await runCli(['rescan', '--config', config, '--json'], AS_NOBODY)
    expect(rescan.code).toBe(0)
    const during = await until(async () => {
      const s = await status(config)
      return s.filesSkipped > 0 ? s : undefined
    }, 10_000, 'the unreadable directory to be listed')
    expect(during.index.files).toBe(4)
    expect((await runCli(['ls', '--config', config], AS_NOBODY)).stdout).toContain('notes/private/inside.txt')
    expect((await daemon.stop()).code).toBe(0)
  })
})
