import { describe, it, expect } from 'vitest'
import { startInProcessDaemon } from '../helpers/in-process-daemon.js'
import { mkdir, rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { type StatusDocument } from '../../src/daemon/index.js'
import { bytesCid, cidProfile } from '../../src/content/index.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'
import { httpGet } from '../helpers/http.js'

const cidOf = (text: string): string => bytesCid(Buffer.from(text), cidProfile('kubo-cidv1')).toString()


async function startDaemon (dir: string): Promise<{ port: number, token: string }> {
  return await startInProcessDaemon(dir)
}

/** Another program writing the index behind the daemon's back (what a missed event leaves). */
function tamper (dir: string, sql: string[]): void {
  const db = new Database(join(dir, 'state', 'index.sqlite'))
  try {
    for (const statement of sql) db.exec(statement)
  } finally {
    db.close()
  }
}

function rows (dir: string): Record<string, string | null> {
  const db = new Database(join(dir, 'state', 'index.sqlite'), { readonly: true })
  try {
    const all = db.prepare('SELECT path, cid FROM entries WHERE deleted = 0 ORDER BY path').all() as Array<{ path: string, cid: string | null }>
    return Object.fromEntries(all.map(r => [r.path, r.cid]))
  } finally {
    db.close()
  }
}

describe('the drift check', () => {
  it('repairs rows that differ from the folders on POST /rescan, counts them in status and metrics', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'), { recursive: true })
    for (const name of ['a.md', 'b.md', 'c.md']) await writeFile(join(dir, 'notes', name), name)
    const { port, token } = await startDaemon(dir)
    expect(rows(dir)).toEqual({ 'a.md': cidOf('a.md'), 'b.md': cidOf('b.md'), 'c.md': cidOf('c.md') })

    tamper(dir, [
      "DELETE FROM entries WHERE path = 'a.md'",
      "UPDATE entries SET size = 999, cid = 'bafy-stale' WHERE path = 'b.md'",
      "INSERT INTO entries (device_id, folder, path, size, mtime_ms, cid, cid_profile, updated_at, deleted, seq) SELECT device_id, folder, 'ghost.md', 1, 1, 'bafy-ghost', cid_profile, 1, 0, 0 FROM entries WHERE path = 'c.md'"
    ])
    expect((await httpGet({ port }, '/rescan', { method: 'POST' })).status).toBe(401)
    const answer = await httpGet({ port }, '/rescan', { method: 'POST', headers: { authorization: `Bearer ${token}` } })
    expect(answer.status).toBe(200)
    expect(JSON.parse(answer.body)).toMatchObject({ repaired: 3, folders: [{ name: 'notes', repaired: 3 }] })
    // The repairs go through the batched writer: committed within its interval, later on a loaded machine.
    const want = JSON.stringify({ 'a.md': cidOf('a.md'), 'b.md': cidOf('b.md'), 'c.md': cidOf('c.md') })
    await until(() => JSON.stringify(rows(dir)) === want || undefined, 10_000, 'the repairs committed')

    const status = JSON.parse((await httpGet({ port }, '/status')).body) as StatusDocument
    expect(status.drift).toMatchObject({ running: false, runs: 1, lastRepaired: 3, totalRepaired: 3, lastRunAt: expect.any(String), lastUnchecked: [], nextRunAt: expect.any(String) })
    const metrics = (await httpGet({ port }, '/metrics')).body
    expect(metrics).toContain('cidsync_index_drift_repaired_total 3\n')
    expect(metrics).toContain('cidsync_index_drift_checks_total 1\n')

    // Nothing to repair: counted as a run, nothing added.
    const again = JSON.parse((await httpGet({ port }, '/rescan', { method: 'POST', headers: { authorization: `Bearer ${token}` } })).body) as { repaired: number }
    expect(again.repaired).toBe(0)
  })

  it('never takes a missing folder root (an unmounted disk) for deleted files', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'), { recursive: true })
    await writeFile(join(dir, 'notes', 'a.md'), 'alpha')
    const { port, token } = await startDaemon(dir)
    await rename(join(dir, 'notes'), join(dir, 'away'))
    const answer = JSON.parse((await httpGet({ port }, '/rescan', { method: 'POST', headers: { authorization: `Bearer ${token}` } })).body) as unknown
    expect(answer).toMatchObject({ repaired: 0, folders: [{ name: 'notes', repaired: null }] })
    expect(rows(dir)).toEqual({ 'a.md': cidOf('alpha') })
    const status = JSON.parse((await httpGet({ port }, '/status')).body) as StatusDocument
    expect(status.drift?.lastUnchecked).toEqual(['notes'])
  })
})
