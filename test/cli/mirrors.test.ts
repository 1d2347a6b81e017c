import { describe, expect, it } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { DaemonProcess, runCli } from '../helpers/cli.js'
import { httpGet } from '../helpers/http.js'
import { until } from '../helpers/wait.js'
import { proofDir, status, statusOf } from '../proof/harness.js'
import { holds, mirroredDevice, publishNow, startHome, stopHome, type MirrorDevice } from './mirror-helpers.js'

/** Every object this device stored (content records) and every manifest and segment its publishes logged. */
function loggedObjects (d: MirrorDevice): string[] {
  const db = new Database(join(d.state, 'sync.sqlite'), { readonly: true })
  try {
    return db.prepare("SELECT cid FROM replica_log WHERE kind = 'object' ORDER BY seq").pluck().all() as string[]
  } finally {
    db.close()
  }
}

function contentObjects (d: MirrorDevice): string[] {
  const db = new Database(join(d.state, 'index.sqlite'), { readonly: true })
  try {
    return (db.prepare('SELECT objects FROM content').pluck().all() as string[]).flatMap(o => (JSON.parse(o) as Array<[string, number, number]>).map(([cid]) => cid))
  } finally {
    db.close()
  }
}

async function mirrorOf (d: MirrorDevice): Promise<Record<string, any>> {
  const s = await status(d)
  expect(s.mirrors).toHaveLength(1)
  return s.mirrors[0] as Record<string, any>
}

/** Writes a new stored file and waits for the daemon to index it. */
async function change (d: MirrorDevice, i: number): Promise<void> {
  await writeFile(join(d.kept, `f${i}.txt`), `file ${i}\n`.repeat(1 + i))
  await until(async () => (await status(d)).folders.find((f: { name: string }) => f.name === 'kept')?.files === i + 1 ? true : undefined, 30_000, `f${i}.txt indexed`)
}

async function caughtUp (d: MirrorDevice, cid: string, what: string): Promise<Record<string, any>> {
  return await until(async () => {
    const m = await mirrorOf(d)
    return m.objectsBehind === 0 && m.publishesBehind === 0 && m.lastPublish?.cid === cid ? m : undefined
  }, 120_000, what, 100)
}

describe('mirrors: every publish and stored object copied to a second home', () => {
  it('copies publishes and content with identical CIDs; a mirror down for many publishes catches up with none lost, also across kill -9; status, metrics and --check show its lag', async () => {
    const root = await proofDir()
    const primary = await startHome(join(root, 'primary'))
    let mirror = await startHome(join(root, 'mirror'))
    const d = await mirroredDevice(root, 'a', primary, mirror)
    const env = { ...process.env, CIDSYNC_MIRROR_RETRY_MAX_MS: '500', CIDSYNC_MIRROR_POINTER_CHECK_MS: '300' }
    let daemon = new DaemonProcess(['--config', d.config], { env })
    await daemon.logged('service ready', 60_000)

    // Caught up: the mirror's pointer is the primary's publish, and it holds every object by the same CID.
    await change(d, 0)
    let cid = await publishNow(d)
    let m = await caughtUp(d, cid, 'the first publish on the mirror')
    expect(m.lastError).toBeNull()
    const objects = loggedObjects(d)
    expect(objects).toContain(cid)
    for (const object of contentObjects(d)) expect(objects).toContain(object)
    for (const object of objects) expect(await holds(mirror, object, root), `mirror holds ${object}`).toBe(true)

    // Down: the primary publishes as before, the mirror's lag and error are shown, --check fails past the bound.
    await stopHome(mirror)
    const whileDown: string[] = []
    for (let i = 1; i <= 6; i++) {
      await change(d, i)
      whileDown.push(await publishNow(d))
    }
    m = await until(async () => { const x = await mirrorOf(d); return x.lastError !== null && x.objectsBehind > 0 ? x : undefined }, 60_000, 'the mirror shown failing')
    expect(m.publishesBehind).toBeGreaterThanOrEqual(1)
    expect(m.lastError.advice).toContain('does not answer')
    expect(m.lastPublish.cid).toBe(cid)
    const text = await runCli(['status', '--config', d.config])
    expect(text.stdout).toMatch(/mirror nas: \d+ objects?, \d+ publish(es)? behind/)
    expect(text.stdout).toContain('mirror nas: copying failed')
    const { port, token } = await statusOf(d)
    const metrics = await httpGet({ port }, '/metrics', { headers: { authorization: `Bearer ${token}` } })
    expect(metrics.body).toMatch(/cidsync_mirror_objects_behind\{mirror="nas"\} [1-9]/)
    expect(metrics.body).toContain('cidsync_mirror_failing{mirror="nas"} 1')
    // The bound (max_lag_seconds, 60 at the least) is not passed yet: --check holds (exit 0), its ok line naming the failing mirror.
    const check = await runCli(['status', '--check', '--config', d.config])
    expect(check.code, check.stderr).toBe(0)
    expect(check.stdout).toContain('; not yet a problem: mirror nas: copying fails (')

    // Back: it catches up to the last publish, every publish made while it was down on it.
    mirror = await startHome(join(root, 'mirror'), mirror.url)
    cid = whileDown.at(-1) as string
    await caughtUp(d, cid, 'the mirror caught up after being down')
    for (const manifest of whileDown) expect(await holds(mirror, manifest, root), `publish ${manifest} on the mirror`).toBe(true)
    for (const object of loggedObjects(d)) expect(await holds(mirror, object, root), `mirror holds ${object}`).toBe(true)

    // Down again, then killed -9 while it catches up: the next start finishes the copy.
    await stopHome(mirror)
    for (let i = 7; i <= 10; i++) {
      await change(d, i)
      cid = await publishNow(d)
    }
    mirror = await startHome(join(root, 'mirror'), mirror.url)
    await until(async () => (await mirrorOf(d)).copiedTotal > 0 ? true : undefined, 60_000, 'catch-up under way')
    await daemon.stop('SIGKILL')
    daemon = new DaemonProcess(['--config', d.config], { env })
    await daemon.logged('service ready', 60_000)
    await caughtUp(d, cid, 'catch-up finished after kill -9')
    for (const object of loggedObjects(d)) expect(await holds(mirror, object, root), `mirror holds ${object}`).toBe(true)
    const again = await statusOf(d)
    const after = await httpGet({ port: again.port }, '/metrics', { headers: { authorization: `Bearer ${again.token}` } })
    expect(after.body).toContain('cidsync_mirror_objects_behind{mirror="nas"} 0')
    expect(after.body).toContain('cidsync_mirror_lag_seconds{mirror="nas"} 0')
    await daemon.stop()
    await stopHome(mirror)
    await stopHome(primary)
  }, 600_000)
})
