import { describe, expect, it } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DaemonProcess, runCli } from '../helpers/cli.js'
import { httpGet } from '../helpers/http.js'
import { device, ok, proofDir, status, statusOf, type Device } from '../proof/harness.js'

/** Schedules that never fire (forget and prune run from the CLI here); a policy that keeps one publish. */
const EXTRA =
  '[snapshot]\nschedule = "0 0 1 1 *"\nquiet_seconds = 86400\nmin_interval_seconds = 0\ndeal = false\ncompact_after_deltas = 1\n' +
  '[reconcile]\nschedule = "0 0 1 1 *"\n[verify]\nschedule = ""\n' +
  '[retention]\nkeep_last = 1\nprune_margin = "0s"\nschedule = "0 0 1 1 *"\n'

interface Counted { objects: number, bytes: number }

/** A metric's value as /metrics answers it, or undefined when absent. */
function metric (body: string, name: string): number | undefined {
  const line = body.split('\n').find(l => l.startsWith(`${name} `))
  return line === undefined ? undefined : Number(line.slice(name.length + 1))
}

async function snapshot (d: Device, file: string, at: string): Promise<void> {
  await writeFile(join(d.folder, file), `${file}\n`)
  await ok(['snapshot', '--config', d.config], { env: { ...process.env, CIDSYNC_TEST_CLOCK: at } })
}

describe('forget and prune in status, metrics and `cidsync status`', () => {
  it('shows the CLI\'s forget, dry run and prune in the daemons started after them, each with its time', async () => {
    const root = await proofDir()
    const d = await device(root, 'a', { extra: EXTRA })
    for (const [i, at] of ['2026-03-01T01:00:00.000Z', '2026-03-01T02:00:00.000Z', '2026-03-01T03:00:00.000Z'].entries()) await snapshot(d, `f${i}.md`, at)
    await ok(['forget', '--config', d.config])
    const dry = JSON.parse((await ok(['prune', '--dry-run', '--json', '--config', d.config])).stdout) as { deleted: Record<string, number>, bytes: number, held: Counted }
    const wouldFree = Object.values(dry.deleted).reduce((n, c) => n + c, 0)
    expect(wouldFree).toBeGreaterThan(0)

    // No daemon: `status` shows what sync.sqlite recorded, and exits 1.
    const offline = await runCli(['status', '--config', d.config], { timeoutMs: 60_000 })
    expect(offline.code).toBe(1)
    expect(offline.stdout).toMatch(/retention: last forget at 20\d\d-\S+ \(.+\): kept 1 publish, forgot 2, linked 1 anew/)
    expect(offline.stdout).toContain(`retention: a prune would free ${wouldFree} objects`)
    expect(offline.stdout).toContain('counted by a dry run')

    // A daemon started afterwards shows the CLI's runs: they are in sync.sqlite, not in a process.
    const first = new DaemonProcess(['--config', d.config])
    try {
      await first.logged('service ready', 60_000)
      const r = (await status(d)).retention
      expect(r).toMatchObject({ enabled: true, lastRun: null, lastForget: { kept: 1, forgotten: 2, relinked: 1 }, lastPrune: null, planDueAt: null, planError: null })
      expect(r.plan).toMatchObject({ dryRun: true, held: dry.held, wouldFree: { objects: wouldFree, bytes: dry.bytes }, young: 0, chainsHeld: 0 })
      const { port } = await statusOf(d)
      const metrics = (await httpGet({ port }, '/metrics')).body
      expect(metric(metrics, 'cidsync_retention_enabled')).toBe(1)
      expect(metric(metrics, 'cidsync_forget_last_forgotten_publishes')).toBe(2)
      expect(metric(metrics, 'cidsync_forget_last_kept_publishes')).toBe(1)
      expect(metric(metrics, 'cidsync_forget_last_timestamp_seconds')).toBe(Date.parse(r.lastForget.at) / 1000)
      expect(metric(metrics, 'cidsync_prune_would_free_objects')).toBe(wouldFree)
      expect(metric(metrics, 'cidsync_prune_would_free_bytes')).toBe(dry.bytes)
      expect(metric(metrics, 'cidsync_retention_held_bytes')).toBe(dry.held.bytes)
      expect(metric(metrics, 'cidsync_retention_held_objects')).toBe(dry.held.objects)
      expect(metric(metrics, 'cidsync_retention_counted_timestamp_seconds')).toBe(Date.parse(r.plan.at) / 1000)
      // No prune has run yet: its figures are absent, never a 0 that reads as one that freed nothing.
      expect(metric(metrics, 'cidsync_prune_last_deleted_objects')).toBeUndefined()
      const online = (await ok(['status', '--config', d.config])).stdout
      expect(online).toContain('retention: last forget at ')
      expect(online).toMatch(new RegExp(`retention: the account held ${dry.held.objects} objects \\(.+\\) at 20\\d\\d-\\S+ \\(.+\\), counted by a dry run`))
      expect(online).toContain(`retention: a prune would free ${wouldFree} objects`)
    } finally {
      await first.stop()
    }

    // A prune from the CLI while no daemon runs: the next daemon shows it, and what the account holds now.
    const pruned = JSON.parse((await ok(['prune', '--json', '--config', d.config])).stdout) as { deleted: Record<string, number>, bytes: number }
    expect(pruned.bytes).toBe(dry.bytes)
    const second = new DaemonProcess(['--config', d.config])
    try {
      await second.logged('service ready', 60_000)
      const r = (await status(d)).retention
      expect(r.lastPrune).toMatchObject({ objects: wouldFree, bytes: dry.bytes, kinds: pruned.deleted })
      expect(r.plan).toMatchObject({ dryRun: false, held: { objects: dry.held.objects - wouldFree, bytes: dry.held.bytes - dry.bytes }, wouldFree: { objects: 0, bytes: 0 } })
      const metrics = (await httpGet({ port: (await statusOf(d)).port }, '/metrics')).body
      expect(metric(metrics, 'cidsync_prune_last_deleted_objects')).toBe(wouldFree)
      expect(metric(metrics, 'cidsync_prune_last_deleted_bytes')).toBe(dry.bytes)
      // A clean run: nothing refused.
      expect(metric(metrics, 'cidsync_prune_last_refused_objects')).toBe(0)
      expect(metric(metrics, 'cidsync_prune_last_timestamp_seconds')).toBe(Date.parse(r.lastPrune.at) / 1000)
      expect(metric(metrics, 'cidsync_prune_would_free_objects')).toBe(0)
      const online = (await ok(['status', '--config', d.config])).stdout
      expect(online).toMatch(new RegExp(`retention: last prune at 20\\d\\d-\\S+ \\(.+\\): deleted ${wouldFree} objects`))
      expect(online).toContain('counted by a prune')
    } finally {
      await second.stop()
    }
  }, 300_000)
})
