import { describe, expect, it } from 'vitest'
import { execFileSync } from 'node:child_process'
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { DaemonProcess, runCli } from '../helpers/cli.js'
import { until } from '../helpers/wait.js'
import { DirectoryObjectStore } from '../../src/store/index.js'
import { device, ok, proofDir, remoteDevice, shareKey, status } from '../proof/harness.js'
import { publishNow, startHome, stopHome } from './mirror-helpers.js'

const ENV = { ...process.env, CIDSYNC_MIRROR_RETRY_MAX_MS: '500', CIDSYNC_MIRROR_POINTER_CHECK_MS: '300' }

/** Kept: a storing folder beside notes; schedules that never fire; a mirror that is a directory. */
const DIRECTORY_EXTRA = (path: string): string =>
  '[snapshot]\nschedule = "0 0 1 1 *"\nquiet_seconds = 86400\nmin_interval_seconds = 0\ndeal = false\n[reconcile]\nschedule = "0 0 1 1 *"\n[verify]\nschedule = ""\n' +
  '[[folders]]\nname = "kept"\npath = "kept"\nstore = true\n' +
  `[[mirrors]]\nname = "usb"\npath = "${path}"\n`

function loggedObjects (state: string): string[] {
  const db = new Database(join(state, 'sync.sqlite'), { readonly: true })
  try {
    return db.prepare("SELECT cid FROM replica_log WHERE kind = 'object' ORDER BY seq").pluck().all() as string[]
  } finally {
    db.close()
  }
}

describe('a mirror that is a plain directory (a USB disk, a NAS mount)', () => {
  it('is made by login --mirror, never by the daemon; holds every object and the pointer; restore --from reads it by name or path', async () => {
    const root = await proofDir()
    const primary = await startHome(join(root, 'primary'))
    const usb = join(root, 'usb')
    const d = await remoteDevice(root, 'a', primary, { extra: DIRECTORY_EXTRA(usb) })
    const kept = join(d.root, 'kept')
    await mkdir(kept, { recursive: true })
    await writeFile(join(kept, 'k0.txt'), 'kept 0\n')
    await writeFile(join(d.folder, 'n0.txt'), 'note 0\n')
    const daemon = new DaemonProcess(['--config', d.config], { env: ENV })
    try {
      await daemon.logged('service ready', 60_000)
      await until(async () => (await status(d)).index.files === 2 ? true : undefined, 30_000, 'files indexed')
      const first = await publishNow(d)

      // Not made yet (a disk not mounted looks the same): the daemon never makes it, and says what to do.
      const failing = await until(async () => { const m = (await status(d)).mirrors[0]; return m?.lastError !== null ? m : undefined }, 60_000, 'the mirror failing')
      expect(failing.lastError.code).toBe('ERR_DIRECTORY_STORE')
      expect(failing.lastError.advice).toContain('cidsync login --mirror usb')
      // Unmounted is the likelier cause: a new store made on the empty mount point would fill the wrong disk.
      expect(failing.lastError.advice).toMatch(/mount its disk.*copying resumes by itself.*Only for a new disk/)
      await expect(readFile(join(usb, 'cidsync-store.json'))).rejects.toThrow()

      const login = await ok(['login', '--config', d.config, '--mirror', 'usb'])
      expect(login.stdout).toContain(`mirror usb is a directory: nothing to sign in to; its store is ready at ${usb}`)
      expect(login.stdout).toContain('a running daemon copies to it at its next try, within 5 minutes')
      await until(async () => { const m = (await status(d)).mirrors[0]; return m.objectsBehind === 0 && m.lastPublish?.cid === first ? true : undefined }, 120_000, 'the directory caught up', 100)

      await writeFile(join(kept, 'k1.txt'), 'kept 1\n')
      await until(async () => (await status(d)).index.files === 3 ? true : undefined, 30_000, 'k1 indexed')
      const second = await publishNow(d)
      await until(async () => { const m = (await status(d)).mirrors[0]; return m.objectsBehind === 0 && m.lastPublish?.cid === second ? true : undefined }, 120_000, 'the second publish copied', 100)

      // Every object the device logged is in the directory, whole, and its pointer names the publish.
      const store = await DirectoryObjectStore.open(usb)
      for (const cid of loggedObjects(d.state)) expect(await store.has(cid), `the directory holds ${cid}`).toBe(true)
      const pointers = JSON.parse(await readFile(join(usb, 'pointers.json'), 'utf8')) as Record<string, { snapshotCid: string }>
      expect(Object.values(pointers).map(p => p.snapshotCid)).toEqual([second])
      const verify = await runCli(['verify', '--mirror', 'usb', '--config', d.config], { timeoutMs: 120_000 })
      expect(verify.code, verify.stderr).toBe(0)
    } finally {
      await daemon.stop()
    }

    // A new device with the key, the primary gone: the directory alone brings the index and files back.
    await stopHome(primary)
    const fresh = await device(root, 'b', { remoteUrl: primary.url, extra: DIRECTORY_EXTRA(usb) })
    await shareKey(d, fresh)
    const byName = await runCli(['restore', '--from', 'usb', '--config', fresh.config], { timeoutMs: 120_000 })
    expect(byName.code, byName.stderr).toBe(0)
    expect(byName.stdout).toContain('from mirror usb')
    // With the primary gone, the files come from the mirror too: the hint says so.
    expect(byName.stdout).toContain(`\`cidsync restore --files --config ${fresh.config} --from usb [--to DIR]\``)
    const files = await runCli(['restore', '--files', 'kept', '--from', usb, '--to', join(root, 'files'), '--config', fresh.config], { timeoutMs: 120_000 })
    expect(files.code, files.stderr).toBe(0)
    expect(await readFile(join(root, 'files', 'kept', 'k0.txt'), 'utf8')).toBe('kept 0\n')
    expect(await readFile(join(root, 'files', 'kept', 'k1.txt'), 'utf8')).toBe('kept 1\n')

    // A path that is no store is refused, named, and never made.
    const none = await runCli(['restore', '--force', '--from', join(root, 'nothing-here'), '--config', fresh.config], { timeoutMs: 60_000 })
    expect(none.code).toBe(2)
    expect(none.stderr).toContain('ERR_DIRECTORY_STORE')
    await expect(readFile(join(root, 'nothing-here', 'cidsync-store.json'))).rejects.toThrow()

    // A hostile directory: a FIFO as its marker would hold the read for good. Refused at once.
    const hostile = join(root, 'hostile')
    await mkdir(hostile)
    execFileSync('mkfifo', [join(hostile, 'cidsync-store.json')])
    const fifo = await runCli(['restore', '--force', '--from', hostile, '--config', fresh.config], { timeoutMs: 60_000 })
    expect(fifo.code, fifo.stderr).toBe(2)
    expect(fifo.stderr).toContain(`${join(hostile, 'cidsync-store.json')} is a FIFO, not a file cidsync wrote: move it aside [ERR_DIRECTORY_STORE]`)
    await rm(join(root, 'files'), { recursive: true, force: true })
  }, 600_000)
})
