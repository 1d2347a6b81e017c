import { describe, expect, it, onTestFinished } from 'vitest'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DaemonProcess, runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

describe('cidsync snapshot with no daemon, a folder missing', { timeout: 120_000 }, () => {
  it('publishes what it has, names the folder it could not read and what to do, and exits 1, not 0', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'))
    await writeFile(join(dir, 'notes', 'a.md'), 'alpha')
    const config = join(dir, 'c.toml')
    // `init`'s config names ~/notes before it exists: a first snapshot must not pass for a backup of it.
    await writeFile(config, 'state_dir = "state"\n[[folders]]\nname = "notes"\npath = "notes"\nstore = true\n[[folders]]\nname = "usb"\npath = "usb"\n[status]\nlisten = "127.0.0.1:0"\n')
    const run = await runCli(['snapshot', '--config', config], { timeoutMs: 90_000 })
    expect(run.code, run.stderr).toBe(1)
    expect(run.stdout).toMatch(/^\S+ {2}1 entry\n$/)
    expect(run.stderr).toContain(`cidsync: folder usb not indexed: folder "usb" at ${join(dir, 'usb')} does not exist`)
    expect(run.stderr).toContain('published, but 1 folder could not be read (usb, named above): the publish holds its files as the index last saw them; mount or create it (or remove it from the config), then run `cidsync snapshot` again [ERR_FOLDERS_NOT_INDEXED]')

    const json = await runCli(['snapshot', '--json', '--config', config], { timeoutMs: 90_000 })
    expect(json.code, json.stderr).toBe(1)
    expect(JSON.parse(json.stdout)).toMatchObject({ foldersInError: [{ folder: 'usb', error: expect.stringContaining('does not exist') }] })

    // Once it is there, the same command exits 0.
    await mkdir(join(dir, 'usb'))
    const fine = await runCli(['snapshot', '--config', config], { timeoutMs: 90_000 })
    expect(fine.code, fine.stderr).toBe(0)
    expect(fine.stderr).not.toContain('not indexed')
  })
})

describe('cidsync snapshot through the running daemon, a folder missing', { timeout: 180_000 }, () => {
  it('names the folder the daemon cannot read and exits 1, as without a daemon', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'))
    await writeFile(join(dir, 'notes', 'a.md'), 'alpha')
    const config = join(dir, 'c.toml')
    await writeFile(config, 'state_dir = "state"\n[[folders]]\nname = "notes"\npath = "notes"\n[[folders]]\nname = "usb"\npath = "usb"\n[status]\nlisten = "127.0.0.1:0"\n')
    const daemon = new DaemonProcess(['--config', config])
    onTestFinished(async () => { await daemon.stop() })
    await daemon.logged('service ready', 60_000)
    const run = await runCli(['snapshot', '--config', config], { timeoutMs: 90_000 })
    expect(run.code, run.stderr).toBe(1)
    expect(run.stdout).toMatch(/^\S+ {2}1 entry/)
    expect(run.stderr).toContain(`cidsync: folder usb not indexed: folder "usb" at ${join(dir, 'usb')} does not exist`)
    expect(run.stderr).toContain('[ERR_FOLDERS_NOT_INDEXED]')
  })
})
