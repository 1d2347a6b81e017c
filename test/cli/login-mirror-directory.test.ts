import { existsSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { chmod, mkdir, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

async function configWith (root: string, path: string): Promise<string> {
  const config = join(root, 'cidsync.toml')
  await writeFile(config, `state_dir = "state"\n[[mirrors]]\nname = "usb"\npath = "${path}"\n`)
  return config
}

describe('cidsync login --mirror NAME for a directory', () => {
  it('makes the store private, and says nothing more where only its owner writes', async () => {
    const root = await useTempDir()
    const usb = join(root, 'usb', 'cidsync')
    // The disk not mounted: its mount point is missing, and no store is made in its place.
    const unmounted = await runCli(['login', '--config', await configWith(root, usb), '--mirror', 'usb'])
    expect(unmounted.code, unmounted.stderr).toBe(2)
    expect(unmounted.stderr).toContain(`${join(root, 'usb')} does not exist, so ${usb} was not made: is its disk mounted?`)
    expect(existsSync(join(root, 'usb'))).toBe(false)
    await mkdir(join(root, 'usb'), { mode: 0o700 })
    const login = await runCli(['login', '--config', await configWith(root, usb), '--mirror', 'usb'])
    expect(login.code, login.stderr).toBe(0)
    expect(login.stdout).toContain(`mirror usb is a directory: nothing to sign in to; its store is ready at ${usb}\n`)
    expect(login.stderr).toBe('')
    expect((await stat(usb)).mode & 0o777).toBe(0o700)
  })

  // A NAS share or a disk mounted with umask=000: anyone may swap what the daemon copies there.
  it('warns when others may write where the store is', async () => {
    const root = await useTempDir()
    const share = join(root, 'share')
    const usb = join(share, 'cidsync')
    await mkdir(join(usb, 'objects'), { recursive: true })
    await chmod(share, 0o777)
    await chmod(join(usb, 'objects'), 0o777)
    const login = await runCli(['login', '--config', await configWith(root, usb), '--mirror', 'usb'])
    expect(login.code, login.stderr).toBe(0)
    expect(login.stderr).toContain(`cidsync: warning: others can write to ${share}, ${join(usb, 'objects')}: they could replace, remove or set back what is copied there`)
    // A sticky parent (as /tmp) lets none rename the store away: only the store's own folder counts.
    await chmod(share, 0o1777)
    const again = await runCli(['login', '--config', await configWith(root, usb), '--mirror', 'usb'])
    expect(again.stderr).toContain(`cidsync: warning: others can write to ${join(usb, 'objects')}:`)
  })
})
