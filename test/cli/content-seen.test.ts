import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { DaemonProcess, runCli } from '../helpers/cli.js'
import { httpGet } from '../helpers/http.js'
import { until } from '../helpers/wait.js'
import { admin, post, proofDir, remoteDevice, serviceProcess, status, statusOf } from '../proof/harness.js'

interface LsRow { folder: string, path: string, content: string, why?: string, remote: string }

async function ls (config: string): Promise<{ rows: Map<string, LsRow>, human: string }> {
  const json = await runCli(['ls', '--json', '--config', config], { timeoutMs: 60_000 })
  expect(json.code, json.stderr).toBe(0)
  const human = await runCli(['ls', '--config', config], { timeoutMs: 60_000 })
  expect(human.code, human.stderr).toBe(0)
  return { rows: new Map((JSON.parse(json.stdout) as LsRow[]).map(r => [`${r.folder}/${r.path}`, r])), human: human.stdout }
}

/** The human `ls` line of a path: its STORED column. */
function lsState (human: string, path: string): string | undefined {
  const line = human.split('\n').find(l => l.endsWith(`  ${path}`))
  return line?.trim().split(/\s+/).at(-2)
}

const EXTRA = '[snapshot]\nschedule = "0 0 1 1 *"\nquiet_seconds = 86400\n[reconcile]\nschedule = "0 0 1 1 *"\n[[folders]]\nname = "kept"\npath = "kept"\nstore = true\n[content]\nexclude = ["*.tmp"]\n# One upload at a time: the file after a slow one waits, queued.\nconcurrency = 1\n'

describe('every file\'s content state is seen: ls, status, metrics, status --check', () => {
  it('ls says local-only, queued, uploading, sent-for-deal, deal-active and failed with why; status and /metrics count per folder; --check fails once failures outlast the bound, across a restart', async () => {
    const root = await proofDir()
    const service = await serviceProcess(join(root, 'service'), ['--deal-delay-ms', '100'])
    const d = await remoteDevice(root, 'a', service, { extra: EXTRA })
    const kept = join(d.root, 'kept')
    await mkdir(kept, { recursive: true })
    await writeFile(join(kept, 'a.txt'), 'kept a')
    await writeFile(join(kept, 'skip.tmp'), 'excluded')
    await writeFile(join(d.folder, 'plain.txt'), 'index only')

    // Stored, with a deal asked for; then the deal is made.
    let daemon = new DaemonProcess(['--config', d.config])
    await daemon.logged('service ready', 30_000)
    await until(async () => (await status(d)).content?.folders?.find((f: { folder: string }) => f.folder === 'kept')?.protected.files === 1 ? true : undefined, 60_000, 'kept/a.txt stored')
    let seen = await ls(d.config)
    expect(seen.rows.get('kept/a.txt')?.content).toBe('sent-for-deal')
    expect(lsState(seen.human, 'kept/a.txt')).toBe('sent-for-deal')
    expect(seen.rows.get('notes/plain.txt')?.content).toBe('local-only')
    expect(seen.rows.get('kept/skip.tmp')).toMatchObject({ content: 'local-only', why: 'excluded by [content] exclude' })
    expect(seen.human.split('\n')[0]).toMatch(/SIZE\s+CID\s+STORED\s+PATH/)
    await until(async () => {
      expect((await post(d, '/reconcile')).status).toBe(200)
      return (await ls(d.config)).rows.get('kept/a.txt')?.content === 'deal-active' ? true : undefined
    }, 30_000, 'the deal made, seen by ls')
    // find's STORED column is the same answer.
    const found = await runCli(['find', 'a.txt', '--config', d.config], { timeoutMs: 60_000 })
    expect(found.stdout).toMatch(/deal-active\s+kept\/a\.txt/)
    const foundJson = JSON.parse((await runCli(['find', 'plain', '--json', '--config', d.config], { timeoutMs: 60_000 })).stdout) as { results: Array<{ stored: string }> }
    expect(foundJson.results.map(r => r.stored)).toEqual(['local-only'])

    // A slow upload: the large file is uploading, the one after it queued.
    expect((await admin(service.url, service.dir, 'PUT', '/local/faults', { upload: { latencyMs: 60_000 } })).status).toBe(200)
    await writeFile(join(kept, 'b-big.bin'), randomBytes(1536 * 1024))
    await writeFile(join(kept, 'c.txt'), 'after the big one')
    await until(async () => ((await status(d)).content?.uploading ?? []).some((u: { path: string }) => u.path === 'b-big.bin') ? true : undefined, 60_000, 'the big file uploading')
    seen = await ls(d.config)
    expect(seen.rows.get('kept/b-big.bin')?.content).toBe('uploading')
    expect(seen.rows.get('kept/c.txt')?.content).toBe('queued')
    expect(lsState(seen.human, 'kept/c.txt')).toBe('queued')
    expect((await runCli(['find', 'b-big', '--config', d.config], { timeoutMs: 60_000 })).stdout).toMatch(/uploading\s+kept\/b-big\.bin/)
    await daemon.stop()

    // Uploads refused: each file failed, with why, in ls, status and /metrics.
    expect((await admin(service.url, service.dir, 'PUT', '/local/faults', { upload: { errorRate: 1, status: 400 } })).status).toBe(200)
    daemon = new DaemonProcess(['--config', d.config])
    await daemon.logged('service ready', 30_000)
    const failing = await until(async () => {
      const s = await status(d)
      return s.content?.failures?.length === 2 ? s : undefined
    }, 60_000, 'both new files failed')
    expect(failing.content.failures.map((f: { path: string }) => f.path).sort()).toEqual(['b-big.bin', 'c.txt'])
    seen = await ls(d.config)
    expect(seen.rows.get('kept/b-big.bin')?.content).toBe('failed')
    expect(seen.rows.get('kept/b-big.bin')?.why).toContain('400')
    expect(seen.human).toContain('2 files not stored:')
    expect(seen.human).toMatch(/ {2}kept\/c\.txt: failed since \S+: .*400.*: it is tried again/)
    const human = await runCli(['status', '--config', d.config], { timeoutMs: 30_000 })
    // The excluded file is left out, not pending (`ls` says why).
    expect(human.stdout).toMatch(/FOLDER\s+PROTECTED\s+BYTES\s+PENDING\s+BYTES\s+FAILED\s+LEFT OUT\n\s*kept\s+1\s+6 B\s+2\s+1\.5 MiB\s+2\s+1\n/)
    expect(human.stdout).toContain('left out: files never stored')
    expect(human.stdout).toMatch(/failed: kept\/b-big\.bin \(ERR_\w+ since .*\): .*400.*: it is tried again/)
    expect(human.stdout).toMatch(/saved by dedup/)
    const metrics = (await httpGet({ port: (await statusOf(d)).port }, '/metrics')).body
    expect(metrics).toContain('cidsync_content_failed_files{folder="kept"} 2')
    expect(metrics).toContain('cidsync_content_protected_files{folder="kept"} 1')
    expect(metrics).toContain('cidsync_content_pending_bytes{folder="kept"} ' + String(1536 * 1024 + 'after the big one'.length))
    expect(metrics).toContain('cidsync_content_left_out_files{folder="kept"} 1')
    expect(metrics).toContain('cidsync_content_failing_too_long 0')
    const early = await runCli(['status', '--check', '--config', d.config], { timeoutMs: 30_000 })
    expect(early.stderr).not.toContain('content:')
    await daemon.stop()

    // No daemon: ls reads the failures the daemon left in the state dir.
    seen = await ls(d.config)
    expect(seen.rows.get('kept/c.txt')?.content).toBe('failed')
    expect((await runCli(['status', '--config', d.config], { timeoutMs: 30_000 })).stdout).toContain('content: 2 files failed to upload at the daemon\'s last pass')

    // Two hours later (the failures' start set back), a restarted daemon still knows how long they last.
    const db = new Database(join(d.state, 'sync.sqlite'))
    const kept2 = JSON.parse(db.prepare("SELECT value FROM sync_state WHERE key = 'content_failures'").pluck().get() as string) as Array<Record<string, unknown>>
    // Due for their retry now: the restarted daemon tries them again (and they fail again).
    const aged = kept2.map(f => ({ ...f, since: new Date(Date.now() - 2 * 3_600_000).toISOString(), retryAt: new Date(Date.now() - 1000).toISOString() }))
    db.prepare("UPDATE sync_state SET value = ? WHERE key = 'content_failures'").run(JSON.stringify(aged))
    db.close()
    daemon = new DaemonProcess(['--config', d.config])
    await daemon.logged('service ready', 30_000)
    // Failing again keeps when the failures began, and counts the tries (the back-off grows).
    const again = await until(async () => {
      const s = await status(d)
      return s.content?.lastRun != null && (s.content.failures ?? []).every((f: { attempts: number }) => f.attempts === 2) && s.content.failures.length === 2 ? s : undefined
    }, 60_000, 'both files tried again after the restart')
    expect(again.content.failures.map((f: { since: string }) => f.since).sort()).toEqual(aged.map(f => f.since as string).sort())
    const check = await runCli(['status', '--check', '--config', d.config], { timeoutMs: 30_000 })
    expect(check.code).toBe(1)
    expect(check.stderr).toMatch(/content: 2 files have failed to upload, the oldest for more than 1 h: kept\/\S+ \(since .*400.*\); kept\/\S+ \(since .*: it is tried again.*`cidsync ls` shows each file's state/)
    expect(check.stderr).toContain('kept/b-big.bin (since')
    expect(check.stderr).toContain('kept/c.txt (since')
    expect((await httpGet({ port: (await statusOf(d)).port }, '/metrics')).body).toContain('cidsync_content_failing_too_long 1')
    await daemon.stop()
  }, 300_000)
})
