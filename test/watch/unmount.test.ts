import { describe, it, expect } from 'vitest'
import { spawnSync } from 'node:child_process'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DaemonProcess } from '../helpers/cli.js'
import { httpGet } from '../helpers/http.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'
import { writeTestConfig } from '../helpers/config-file.js'

// A user and mount namespace of its own lets a test bind-mount and unmount without privileges.
const canMount = spawnSync('unshare', ['-Urm', 'sh', '-c', 'd=$(mktemp -d) && mkdir "$d/a" "$d/b" && mount --bind "$d/a" "$d/b"; r=$?; umount "$d/b" 2>/dev/null; rm -rf "$d"; exit $r']).status === 0

/** Runs `command` in the daemon's mount namespace. */
function inDaemonNamespace (daemon: DaemonProcess, command: string[]): void {
  const result = spawnSync('nsenter', ['-t', String(daemon.child.pid), '-U', '-m', '--preserve-credentials', ...command], { encoding: 'utf8' })
  if (result.status !== 0) throw new Error(`${command.join(' ')} failed: ${result.stderr}`)
}

interface Folder { state: string, files: number, error: string | null }

async function folderWhen (port: number, check: (f: Folder) => boolean, what: string): Promise<Folder> {
  let last: Folder | undefined
  return await until(async () => {
    const doc = JSON.parse((await httpGet({ port }, '/status')).body) as { folders: Folder[] }
    last = doc.folders[0]
    return last !== undefined && check(last) ? last : undefined
  }, 15_000, what, 100).catch((err: Error) => { throw new Error(`${err.message}; the folder is ${JSON.stringify(last)}`) })
}

describe('a folder on a disk that is unmounted and mounted again while the daemon runs', () => {
  it.runIf(canMount)('is an error with every row kept while unmounted; a disk with other files mounted there is indexed', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'disk1', 'sub'), { recursive: true })
    await writeFile(join(dir, 'disk1', 'a.md'), 'a')
    await writeFile(join(dir, 'disk1', 'sub', 'b.md'), 'b')
    await mkdir(join(dir, 'disk2'))
    await writeFile(join(dir, 'disk2', 'c.md'), 'c')
    await mkdir(join(dir, 'notes'))
    const config = await writeTestConfig(dir, { watch: { settle_ms: undefined } })
    const daemon = new DaemonProcess(['--config', config], {
      wrap: command => ['unshare', '-Urm', 'sh', '-c', 'mount --bind "$0/disk1" "$0/notes" && exec "$@"', dir, ...command]
    })
    const port = Number(String((await daemon.logged('daemon started')).status).split(':').pop())
    expect(await daemon.logged('index current')).toMatchObject({ files: 2 })
    await daemon.logged('watching')

    inDaemonNamespace(daemon, ['umount', join(dir, 'notes')])
    const away = await folderWhen(port, f => f.state === 'error', 'the folder to be in error')
    expect(away.error).toContain('empty directory (was a disk unmounted?)')
    expect(away.files).toBe(2)

    inDaemonNamespace(daemon, ['mount', '--bind', join(dir, 'disk2'), join(dir, 'notes')])
    await folderWhen(port, f => f.state === 'watching' && f.files === 1, 'the other disk to be indexed')
    await writeFile(join(dir, 'disk2', 'd.md'), 'written on the mounted disk')
    await folderWhen(port, f => f.state === 'watching' && f.files === 2, 'a new file on it to be indexed')
    expect((await daemon.stop()).code).toBe(0)
  })
})
