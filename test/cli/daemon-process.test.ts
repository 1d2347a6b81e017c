import { describe, it, expect } from 'vitest'
import { chmod, chown, mkdir, writeFile, access, stat, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { spawnSync } from 'node:child_process'
import { DaemonProcess, runCli, CLI } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { bound, until } from '../helpers/wait.js'
import { httpGet } from '../helpers/http.js'

/** The daemon can be run where it may mount a small tmpfs of its own (a user namespace). */
const canMountTmpfs = spawnSync('unshare', ['-Urm', 'sh', '-c', 'd=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs "$d"; r=$?; umount "$d" 2>/dev/null; rmdir "$d"; exit $r']).status === 0
/** Runs a command with the state dir `$0/state` on a tmpfs holding a copy of it, then filled to the last byte. */
const FULL_STATE_DISK = 'cp -a "$0/state" "$0/state-copy" && mount -t tmpfs -o size=4m tmpfs "$0/state" && cp -a "$0/state-copy/." "$0/state/" && ' +
  'rm -rf "$0/state-copy" && { dd if=/dev/zero of="$0/state/filler" bs=4k 2>/dev/null; true; } && exec "$@"'

const NOBODY = 65534
const unprivilegedCanRunCli = process.getuid?.() === 0 &&
  spawnSync(process.execPath, ['-e', `require('fs').accessSync(${JSON.stringify(CLI)}, require('fs').constants.R_OK)`], { uid: NOBODY, gid: NOBODY }).status === 0

async function setup (dir: string): Promise<string> {
  await mkdir(join(dir, 'notes', 'sub'), { recursive: true })
  await writeFile(join(dir, 'notes', 'hello.txt'), 'hello world')
  await writeFile(join(dir, 'notes', 'sub', 'v.txt'), 'Hello Venus!\n')
  const config = join(dir, 'config.toml')
  await writeFile(config, `state_dir = "state"
log_level = "info"
[[folders]]
name = "notes"
path = "notes"
[status]
listen = "127.0.0.1:0"
`)
  return config
}

describe('cidsync daemon, as a process', () => {
  it('indexes, answers status and ls, refuses a second daemon, and stops cleanly on SIGTERM', async () => {
    const dir = await useTempDir()
    const config = await setup(dir)
    const daemon = new DaemonProcess(['--config', config])
    const current = await daemon.logged('index current')
    expect(current).toMatchObject({ files: 2, bytes: 24 })
    await daemon.logged('watching')

    const status = await runCli(['status', '--config', config])
    expect(status.code).toBe(0)
    expect(status.stdout).toMatch(/watcher watching · index current since/)
    expect(status.stdout).toMatch(/notes\s+watching\s+2\s+24 B\s+0\s+0/)
    const json = JSON.parse((await runCli(['status', '--config', config, '--json'])).stdout) as { folders: Array<{ files: number }> }
    expect(json.folders[0]?.files).toBe(2)

    const ls = await runCli(['ls', '--config', config])
    expect(ls.stdout).toBe(
      'SIZE  CID                                                          STORED      PATH\n' +
      '11 B  bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e  local-only  notes/hello.txt\n' +
      '13 B  bafkreihfsphazrk2ilejpekyltjeh5k4yvwgjuwg26ueafohqioeo3sdca  local-only  notes/sub/v.txt\n')
    const lsJson = JSON.parse((await runCli(['ls', 'notes/sub/', '--config', config, '--json'])).stdout) as Array<Record<string, unknown>>
    expect(lsJson).toEqual([expect.objectContaining({ folder: 'notes', path: 'sub/v.txt', size: 13, cid: 'bafkreihfsphazrk2ilejpekyltjeh5k4yvwgjuwg26ueafohqioeo3sdca', deleted: false, remote: 'local-only', content: 'local-only' })])

    const second = await runCli(['daemon', '--config', config])
    expect(second.code).toBe(1)
    expect(second.stderr).toContain(`another cidsync daemon holds ${join(dir, 'state', 'daemon.lock')} (pid ${daemon.child.pid ?? 0}`)

    const stopped = await daemon.stop('SIGTERM')
    expect(stopped.code).toBe(0)
    // Exit 0 is the daemon's own word that its stop beat its 9 s stop timeout (past it, it exits 1
    // saying the clean stop took longer); the time seen from here adds this process's own waits.
    expect(daemon.stderr).not.toContain('the clean stop took longer')
    expect(stopped.ms).toBeLessThan(bound(10_000))
    expect(daemon.stderr).toContain('"msg":"daemon stopped"')
    await expect(access(join(dir, 'state', 'daemon.json'))).rejects.toThrow()

    const after = await runCli(['status', '--config', config])
    expect(after.code).toBe(1)
    expect(after.stderr).toContain(`no daemon answers for ${join(dir, 'state')}: none is running`)
  })

  it('keeps running through a SIGHUP before it is started, and reloads once it is', async () => {
    const dir = await useTempDir()
    const config = await setup(dir)
    const good = await readFile(config, 'utf8')
    // Held in start-up: under launchd a bad config is waited on (before that, the daemon module is not even loaded).
    await writeFile(config, good.replace('[status]', '[snapshot]\nencryption = "rot13"\n[status]'))
    const daemon = new DaemonProcess(['--config', config], { env: { ...process.env, CIDSYNC_SUPERVISOR: 'launchd' } })
    await until(() => daemon.stderr.includes('waiting for') || undefined, 15_000, 'the daemon to wait for its config')
    daemon.child.kill('SIGHUP')
    await writeFile(config, good)
    const started = await daemon.logged('daemon started')
    const port = Number(String(started.status).split(':').pop())
    expect((await httpGet({ port }, '/healthz')).status).toBe(200)
    await daemon.logged('a SIGHUP came during start-up: reloading now')
    await daemon.logged('reloaded')
    expect(daemon.child.exitCode).toBeNull()
    expect((await daemon.stop('SIGTERM')).code).toBe(0)
  })

  it('stops cleanly on SIGINT in the middle of hashing a large folder, and finishes the job next start', async () => {
    const dir = await useTempDir()
    const config = await setup(dir)
    const big = Buffer.alloc(8 * 1024 * 1024, 7)
    for (let i = 0; i < 24; i++) await writeFile(join(dir, 'notes', `big-${i}.bin`), big)
    const daemon = new DaemonProcess(['--config', config])
    await daemon.logged('daemon started')
    const stopped = await daemon.stop('SIGINT')
    expect(stopped).toMatchObject({ code: 0 })
    // Exit 0 is the daemon's own word that its stop beat its 9 s stop timeout (past it, it exits 1
    // saying the clean stop took longer); the time seen from here adds this process's own waits.
    expect(daemon.stderr).not.toContain('the clean stop took longer')
    expect(stopped.ms).toBeLessThan(bound(10_000))
    const again = new DaemonProcess(['--config', config])
    expect(await again.logged('index current')).toMatchObject({ files: 26 })
    expect((await again.stop()).code).toBe(0)
  })

  it.runIf(canMountTmpfs)('cannot start on a full state disk: exits 1 with a code that says to free space in the state dir', async () => {
    const dir = await useTempDir()
    const config = await setup(dir)
    const first = new DaemonProcess(['--config', config])
    await first.logged('index current')
    expect((await first.stop()).code).toBe(0)
    const full = new DaemonProcess(['--config', config], { wrap: command => ['unshare', '-Urm', 'sh', '-c', FULL_STATE_DISK, dir, ...command] })
    const { code } = await until(() => full.ended, 15_000, 'the daemon to exit')
    expect(code).toBe(1)
    expect(full.stderr).toContain(`cidsync: cannot start: the disk holding the state dir ${join(dir, 'state')} is full`)
    expect(full.stderr).toContain(`free space in ${join(dir, 'state')}`)
    expect(full.stderr).toContain('[ERR_STATE_DISK_FULL]')
  })

  it('exits 2 naming the key for a bad config', async () => {
    const dir = await useTempDir()
    await writeFile(join(dir, 'bad.toml'), '[status]\nlisten = "0.0.0.0:1"\n')
    const result = await runCli(['daemon', '--config', join(dir, 'bad.toml')])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('status.listen = "0.0.0.0:1"')
  })

  // Root reads every file, so the unreadable file is only unreadable to an unprivileged daemon;
  // that user must be able to reach the built CLI (a checkout under a private dir cannot).
  it.runIf(unprivilegedCanRunCli)('skips a file it cannot read, logs it once, counts it in status', async () => {
    const dir = await useTempDir()
    await chmod(dir, 0o755)
    const config = await setup(dir)
    await writeFile(join(dir, 'notes', 'secret.txt'), 'no')
    await chmod(join(dir, 'notes', 'secret.txt'), 0o600)
    // The daemon's own state dir, as the service user's is.
    await mkdir(join(dir, 'state'), { mode: 0o700 })
    await chown(join(dir, 'state'), NOBODY, NOBODY)
    const daemon = new DaemonProcess(['--config', config], { uid: NOBODY, gid: NOBODY })
    expect(await daemon.logged('index current')).toMatchObject({ files: 2 })
    const status = JSON.parse((await runCli(['status', '--config', config, '--json'])).stdout) as { filesSkipped: number, folders: Array<{ skipped: number }> }
    expect(status.filesSkipped).toBe(1)
    expect((await runCli(['status', '--config', config])).stdout).toMatch(/skipped secret\.txt \(EACCES .*\): the file cannot be read: fix its permissions, it is picked up without a restart/)
    expect(daemon.stderr.split('\n').filter(l => l.includes('file skipped'))).toHaveLength(1)
    await writeFile(join(dir, 'notes', 'secret.txt'), 'still no')
    await until(() => daemon.stderr.includes('"path":"secret.txt"') ? true : undefined, 5_000, 'the skip to be logged')
    await new Promise(resolve => setTimeout(resolve, 500))
    expect(daemon.stderr.split('\n').filter(l => l.includes('file skipped'))).toHaveLength(1)
    expect((await daemon.stop()).code).toBe(0)
  })
})

describe('cidsync init', () => {
  it('writes a config that loads, makes the state dir, and will not overwrite without --force', async () => {
    const dir = await useTempDir()
    const config = join(dir, 'etc', 'config.toml')
    const first = await runCli(['init', '--config', config, '--folder', join(dir, 'My Notes'), '--state-dir', join(dir, 'st')])
    expect(first.code).toBe(0)
    expect(first.stdout).toContain(`wrote ${config}`)
    expect(first.stdout).toContain(`state dir ${join(dir, 'st')}`)
    expect(first.stdout).toMatch(/snapshot key [0-9a-f]{16} in .*snapshot\.key/)
    expect((await stat(join(dir, 'st', 'snapshot.key'))).mode & 0o777).toBe(0o600)
    await access(join(dir, 'st'))
    const again = await runCli(['init', '--config', config])
    expect(again.code).toBe(2)
    expect(again.stderr).toContain('already exists')
    expect((await runCli(['init', '--config', config, '--force'])).code).toBe(0)
  })

  it('leaves ls to say there is no index yet (exit 3)', async () => {
    const dir = await useTempDir()
    await writeFile(join(dir, 'c.toml'), 'state_dir = "st"\n')
    const ls = await runCli(['ls', '--config', join(dir, 'c.toml')])
    expect(ls.code).toBe(3)
    expect(ls.stderr).toContain('no index at')
  })
})
