import { describe, expect, it } from 'vitest'
import { execFileSync, spawn } from 'node:child_process'
import { createServer } from 'node:net'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { CLI, DaemonProcess, runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'

async function config (dir: string, folders: string[]): Promise<string> {
  const path = join(dir, 'c.toml')
  await writeFile(path, `state_dir = "state"\n${folders.map(f => `[[folders]]\nname = "${f}"\npath = "${f}"\n`).join('')}[status]\nlisten = "127.0.0.1:0"\n`)
  return path
}

describe('cidsync status', () => {
  it('--check exits 0 when all is well and 1 naming a folder in error, for monitoring scripts', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'))
    const path = await config(dir, ['notes', 'usb'])
    const daemon = new DaemonProcess(['--config', path])
    await daemon.logged('index current')
    const failing = await runCli(['status', '--check', '--config', path])
    expect(failing.code).toBe(1)
    expect(failing.stderr).toContain('1 problem:')
    expect(failing.stderr).toMatch(/folder usb: .*usb/)
    expect(failing.stderr).toContain('[ERR_STATUS_CHECK]')
    await daemon.stop()

    await mkdir(join(dir, 'usb'))
    const healthy = new DaemonProcess(['--config', path])
    await healthy.logged('index current')
    const ok = await until(async () => {
      const result = await runCli(['status', '--check', '--config', path])
      return result.code === 0 ? result : undefined
    }, 15_000, 'a healthy check')
    expect(ok.stdout).toMatch(/^ok: 2 folders watched, 0 files indexed/)
    await healthy.stop()
  })

  it('--check with a mirror failing to copy, not yet past max_lag_seconds: exit 0, and its ok line says the mirror fails', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'))
    await writeFile(join(dir, 'notes', 'a.md'), 'alpha')
    const holder = createServer()
    await new Promise<void>(resolve => holder.listen(0, '127.0.0.1', resolve))
    const down = `http://127.0.0.1:${(holder.address() as { port: number }).port}`
    await new Promise(resolve => holder.close(resolve))
    const path = await config(dir, ['notes'])
    await writeFile(path, `[snapshot]\ndeal = false\n[[mirrors]]\nname = "nas"\nurl = "${down}"\n`, { flag: 'a' })
    expect((await runCli(['snapshot', '--config', path], { timeoutMs: 120_000 })).code).toBe(0)
    const daemon = new DaemonProcess(['--config', path], { env: { ...process.env, CIDSYNC_MIRROR_RETRY_MAX_MS: '500' } })
    await daemon.logged('index current')
    const ok = await until(async () => {
      const result = await runCli(['status', '--check', '--config', path])
      return result.code === 0 && result.stdout.includes('not yet a problem') ? result : undefined
    }, 30_000, 'the mirror failing, said in the ok line')
    expect(ok.stdout).toMatch(/^ok: 1 folder watched, 1 file indexed, last published \S+; not yet a problem: mirror nas: copying fails \(ERR_REMOTE_NETWORK at \S+\), \d+ s behind, within the 21600 s its max_lag_seconds allows: `cidsync status` says why$/m)
    await daemon.stop()
  })

  it('notes a state dir inside a watched folder, left out of it, without calling it a problem', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'))
    const path = join(dir, 'c.toml')
    await writeFile(path, 'state_dir = "notes/.cidsync"\n[[folders]]\nname = "notes"\npath = "notes"\n[status]\nlisten = "127.0.0.1:0"\n')
    const daemon = new DaemonProcess(['--config', path])
    await daemon.logged('index current')
    expect(daemon.stderr).toContain(`the state dir ${join(dir, 'notes', '.cidsync')} lies inside the watched folder notes`)
    const status = await runCli(['status', '--config', path])
    expect(status.stdout).toContain(`notes: note: the state dir ${join(dir, 'notes', '.cidsync')} lies inside this folder (at .cidsync/): it is not indexed`)
    // The one-glance line, as the dashboard shows it, on the third line.
    expect(status.stdout.split('\n')[2]).toMatch(/^(green|amber|red): .+\./)
    expect((await runCli(['status', '--check', '--config', path])).code).toBe(0)
    await daemon.stop()
  })

  it('gives the advice that fits a skipped file: a name that is not UTF-8 is to be renamed, not a matter of permissions', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'))
    await writeFile(Buffer.concat([Buffer.from(`${join(dir, 'notes')}/bad`), Buffer.from([0xff]), Buffer.from('.md')]), 'x')
    execFileSync('mkfifo', [join(dir, 'notes', 'pipe')])
    const path = await config(dir, ['notes'])
    const daemon = new DaemonProcess(['--config', path])
    await daemon.logged('index current')
    const status = await until(async () => {
      const result = await runCli(['status', '--config', path])
      return result.stdout.includes('skipped bad') ? result : undefined
    }, 15_000, 'the bad name listed')
    const line = status.stdout.split('\n').find(l => l.includes('skipped bad')) ?? ''
    expect(line).toContain('bad\\xff.md (ERR_NAME_NOT_UTF8')
    expect(line).toContain('its name is not valid UTF-8: rename it to index it (not retried')
    expect(line).not.toContain('permissions')
    // A FIFO is listed too, with why, rather than left out without a word.
    const pipe = status.stdout.split('\n').find(l => l.includes('skipped pipe')) ?? ''
    expect(pipe).toContain('(ERR_SPECIAL_FILE')
    expect(pipe).toContain('a FIFO, socket or device: it has no content')
    expect(status.stdout).toMatch(/notes\s+watching\s+0\s+0 B\s+0\s+2/)
    await daemon.stop()
  })

  it('after a refused reload: still reaches the daemon on its old config, and says the reload was refused', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'))
    const path = await config(dir, ['notes'])
    const daemon = new DaemonProcess(['--config', path])
    await daemon.logged('index current')
    await writeFile(path, `state_dir = "state"\n[[folders]]\nname = "notes"\npath = "notes"\n[status]\nlisten = "127.0.0.1:0"\n[snapshot]\nencryption = "rot13"\n`)
    daemon.child.kill('SIGHUP')
    await daemon.logged('reload refused: the config no longer validates; the running one is kept')
    const status = await runCli(['status', '--config', path])
    expect(status.code, status.stderr).toBe(0)
    expect(status.stderr).toContain('cidsync: warning: the config file does not load')
    expect(status.stdout).toMatch(/config: the last reload \(at [^)]+\) was refused, the daemon runs on the config it had: .*rot13/)
    const check = await runCli(['status', '--check', '--config', path])
    expect(check.code).toBe(1)
    expect(check.stderr).toContain('config: invalid config')
    await daemon.stop()
    // With no daemon to ask, the broken file is what is said (exit 2).
    const none = await runCli(['status', '--config', path])
    expect(none.code).toBe(2)
    expect(none.stderr).toContain('[ERR_CONFIG]')
  })

  it('with no daemon and a config that does not load: says the error once, not as a daemon keeping its old config', async () => {
    const dir = await useTempDir()
    const path = join(dir, 'c.toml')
    await writeFile(path, `state_dir = "state"\nnetwork = "${'w'.repeat(257)}"\n[status]\nlisten = "127.0.0.1:0"\n`)
    const result = await runCli(['status', '--config', path])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('[ERR_CONFIG]')
    // No daemon runs with this state dir: there is no config it keeps, and the error is said once.
    expect(result.stderr).not.toContain('the daemon keeps the one it had')
    expect(result.stderr.split('expected at most 256 characters').length - 1).toBe(1)
  })

  it('--check exits 1 when no daemon answers', async () => {
    const dir = await useTempDir()
    const result = await runCli(['status', '--check', '--config', await config(dir, [])])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('no daemon answers')
  })

  it('with the daemon stopped on a device that only restored: says the index lists the other devices\' files, not just "0 files"', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'))
    await writeFile(join(dir, 'notes', 'one.md'), 'one')
    const old = await config(dir, ['notes'])
    expect((await runCli(['snapshot', '--config', old])).code).toBe(0)
    // A second device on the same embedded service's account, with the first one's key.
    const fresh = join(dir, 'fresh.toml')
    await writeFile(fresh, `state_dir = "state2"\n[[folders]]\nname = "notes"\npath = "notes2"\n[status]\nlisten = "127.0.0.1:0"\n[service]\ndir = "state/service"\n`)
    const key = await runCli(['key', 'export', '--config', old])
    expect((await runCli(['key', 'import', '--config', fresh], { input: key.stdout })).code).toBe(0)
    const restored = await runCli(['restore', '--config', fresh])
    expect(restored.code, restored.stderr).toBe(0)
    const offline = await runCli(['status', '--config', fresh])
    expect(offline.code).toBe(1)
    expect(offline.stdout).toContain(`index 0 files, 0 B · ${join(dir, 'state2')}`)
    expect(offline.stdout).toContain('(this device\'s; the index also lists 1 entry (files, links, directories) of 1 other device: `cidsync ls --all-devices`)')
    expect(offline.stdout).toContain('publish: nothing published from this state dir yet')
  })

  it('on a fixed port where no daemon ever ran: says so, without the advice for a token it cannot read', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'))
    const path = await config(dir, ['notes'])
    await writeFile(path, (await readFile(path, 'utf8')).replace('127.0.0.1:0', '127.0.0.1:7345'))
    const fresh = await runCli(['status', '--config', path])
    expect(fresh.code).toBe(1)
    expect(fresh.stderr).toContain(`no daemon has run with ${join(dir, 'state')} yet (it has no status.token): start one with \`cidsync daemon\``)
    expect(fresh.stdout).toContain('daemon: not running: no daemon has run with')
    expect(fresh.stderr).not.toContain('sudo')
  })

  it('with the daemon stopped: shows the index and the last publish from the state dir, with relative times, and still exits 1', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'))
    await writeFile(join(dir, 'notes', 'one.md'), 'one')
    const path = await config(dir, ['notes'])
    const fresh = await runCli(['status', '--config', path])
    expect(fresh.code).toBe(1)
    expect(fresh.stdout).toContain('index: none yet in')
    expect((await runCli(['snapshot', '--config', path])).code).toBe(0)
    const offline = await runCli(['status', '--config', path])
    expect(offline.code).toBe(1)
    expect(offline.stderr).toContain('no daemon answers')
    expect(offline.stdout).toContain('daemon: not running: no daemon answers')
    // Port 0 names no place to ask: the message says no daemon runs for this state dir, not "at 127.0.0.1:0".
    expect(offline.stderr).toContain(`no daemon answers for ${join(dir, 'state')}: none is running`)
    expect(offline.stderr).not.toContain('127.0.0.1:0')
    expect(offline.stdout).toContain(`index 1 file, 3 B · ${join(dir, 'state')}`)
    expect(offline.stdout).toMatch(/^notes\s+1\s+3 B$/m)
    expect(offline.stdout).toMatch(/^publish: last snapshot \S+ at \S+Z \((just now|\d+ s ago|\d+ min ago)\), 1 entry$/m)
    // A script asking for JSON gets the same, as a document, and the same exit.
    const json = await runCli(['status', '--json', '--config', path])
    expect(json.code).toBe(1)
    const document = JSON.parse(json.stdout) as { daemon: { running: boolean, why: string }, index: { files: number, bytes: number }, folders: unknown[], publish: { last: { cid: string, entries: number } | null } }
    expect(document.daemon).toEqual({ running: false, why: expect.stringContaining('no daemon answers') })
    expect({ files: document.index.files, bytes: document.index.bytes, folders: document.folders }).toEqual({ files: 1, bytes: 3, folders: [{ name: 'notes', files: 1, bytes: 3 }] })
    expect(document.publish.last?.entries).toBe(1)
    expect(offline.stdout).toContain(document.publish.last?.cid as string)

    // Running, the times carry their age too.
    const daemon = new DaemonProcess(['--config', path])
    await daemon.logged('index current')
    const online = await runCli(['status', '--config', path])
    expect(online.stdout).toMatch(/index current since \S+Z \((just now|\d+ s ago|\d+ min ago)\)/)
    // The pointer as last read, and when: another device's publish since is not seen until the next read.
    const pointer = await until(async () => { const out = (await runCli(['status', '--config', path])).stdout; return /^pointer: /m.test(out) ? out : undefined }, 30_000, 'the pointer line')
    expect(pointer).toMatch(/^pointer: in sync \(\S+; read \S+Z \((just now|\d+ s ago|\d+ min ago)\)\)$/m)
    await daemon.stop()
  })

  it('--watch shows the summary again until Ctrl-C, then exits 0', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'))
    const path = await config(dir, ['notes'])
    const daemon = new DaemonProcess(['--config', path])
    await daemon.logged('index current')
    const watcher = spawn(process.execPath, [CLI, 'status', '--watch', '0.2', '--config', path], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    watcher.stdout.on('data', (d: Buffer) => { out += d.toString() })
    const exited = new Promise<number | null>(resolve => watcher.on('close', code => resolve(code)))
    await until(() => (out.match(/^cidsync \d/gm)?.length ?? 0) >= 3 || undefined, 15_000, 'three frames')
    watcher.kill('SIGINT')
    expect(await exited).toBe(0)
    expect(out).toContain('notes')
    await daemon.stop()
  })
})
