import { describe, it, expect } from 'vitest'
import { existsSync } from 'node:fs'
import { readdir, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DaemonProcess } from '../helpers/cli.js'
import { bound } from '../helpers/wait.js'
import { device, expectIndexEqualsFolder, FULL, killAfter, limit, ok, proofDir, report, rows, seeded, shareKey, size, type Device, walk, writeFiles } from './harness.js'

/**
 * Crash: kill -9 at seeded random moments of a daemon's start-up scan, a publish and a restore,
 * and at every named failpoint. After each: the index equals the folder, a publish completes,
 * the pointer restores on a second device to the same rows (nothing lost, nothing duplicated).
 */
const PUBLISH_POINTS = ['snapshot', 'upload', 'deal', 'pointer', 'name', 'done'].map(s => `publish:${s}`)
/** Restore's swap, cut between moving the old index aside and moving the new one in. */
const RESTORE_POINTS = ['restore:between-renames']

type Moment = { kind: 'scan' | 'publish' | 'restore', ms: number } | { kind: 'failpoint', point: string }

const key = (r: { device: string, folder: string, path: string, cid: string | null, seq: number, deleted: boolean }): string => `${r.device}|${r.folder}/${r.path}|${r.cid ?? ''}|${r.seq}|${String(r.deleted)}`

async function mutate (d: Device, rng: ReturnType<typeof seeded>, round: number): Promise<void> {
  const files = [...(await walk(d.folder)).keys()]
  for (let i = 0; i < 1 + rng.int(5); i++) {
    const victim = files[rng.int(files.length)]
    if (victim !== undefined) await rm(join(d.folder, victim), { force: true })
  }
  for (let i = 0; i < 1 + rng.int(5); i++) {
    const target = files[rng.int(files.length)]
    if (target !== undefined && existsSync(join(d.folder, target))) await writeFile(join(d.folder, target), `changed in round ${round} ${rng.next()}`)
  }
  await writeFiles(d.folder, 5 + rng.int(size(20, 200)), rng, `r${round}-`, 25)
}

/** The invariants after any crash: caught up, published, restorable, the same rows on both sides. */
async function expectWhole (a: Device, b: Device, context: string, restore: boolean): Promise<void> {
  await ok(['snapshot', '--config', a.config])
  await expectIndexEqualsFolder(a, context, !restore)
  if (!restore) return
  const restored = await ok(['restore', '--force', '--json', '--config', b.config])
  expect(JSON.parse(restored.stdout), context).toMatchObject({ cid: expect.any(String) })
  const want = (await rows(a, true)).map(key).sort()
  const got = (await rows(b, true)).map(key).sort()
  expect(new Set(got).size, `${context}: duplicated rows on the restored device`).toBe(got.length)
  expect(got, context).toEqual(want)
}

describe('proof: crash (kill -9) at random moments and named points', () => {
  it('after every kill the index equals the folder, the pointer restores, nothing lost or duplicated', async () => {
    const rng = seeded('crash')
    const root = await proofDir()
    const a = await device(root, 'a')
    const b = await device(root, 'b')
    await writeFiles(a.folder, size(150, 3_000), rng)
    await ok(['snapshot', '--config', a.config])
    await shareKey(a, b)

    const named: Moment[] = [...PUBLISH_POINTS, ...RESTORE_POINTS].map(point => ({ kind: 'failpoint', point }))
    const moments: Moment[] = FULL_MOMENTS(named, rng)
    const outcome: Record<string, number> = {}
    const started = Date.now()
    for (const [round, moment] of moments.entries()) {
      await mutate(a, rng, round)
      const context = `round ${round}: ${JSON.stringify(moment)} (seed ${rng.seed})`
      let killed: { signal: NodeJS.Signals | null, code: number | null, stderr?: string }
      if (moment.kind === 'scan') {
        const daemon = new DaemonProcess(['--config', a.config])
        await new Promise(resolve => setTimeout(resolve, moment.ms))
        await daemon.stop('SIGKILL')
        killed = { signal: 'SIGKILL', code: null }
        // The next start must catch up by itself, before any publish.
        const again = new DaemonProcess(['--config', a.config])
        await again.logged('index current', 60_000)
        await expectIndexEqualsFolder(a, `${context}: the daemon after the kill`)
        expect((await again.stop()).code, context).toBe(0)
      } else if (moment.kind === 'publish') {
        killed = await killAfter(['snapshot', '--config', a.config], moment.ms)
      } else if (moment.kind === 'restore') {
        await ok(['snapshot', '--config', a.config])
        const had = existsSync(join(b.state, 'index.sqlite'))
        killed = await killAfter(['restore', '--force', '--config', b.config], moment.ms)
        if (had) expect.soft(existsSync(join(b.state, 'index.sqlite')), `${context}: a killed restore left no index.sqlite`).toBe(true)
      } else {
        const point = (moment as { point: string }).point
        const isRestore = point.startsWith('restore:')
        if (isRestore) await ok(['snapshot', '--config', a.config])
        const had = existsSync(join(b.state, 'index.sqlite'))
        killed = await killAfter(isRestore ? ['restore', '--force', '--config', b.config] : ['snapshot', '--config', a.config], bound(60_000), { ...process.env, CIDSYNC_FAILPOINT: point })
        expect.soft(killed.signal, `${context}: the failpoint ${point} was never reached:\n${killed.stderr ?? ''}`).toBe('SIGKILL')
        if (isRestore && had) expect.soft(existsSync(join(b.state, 'index.sqlite')), `${context}: killed between restore's renames, no index.sqlite`).toBe(true)
      }
      const name = moment.kind === 'failpoint' ? (moment as { point: string }).point : `${moment.kind}:${killed.signal === 'SIGKILL' ? 'killed' : 'finished first'}`
      outcome[name] = (outcome[name] ?? 0) + 1
      // CI restores after the moments that touched a restore and at the end; full, after every one.
      await expectWhole(a, b, context, FULL || moment.kind !== 'publish' || round === moments.length - 1)
      console.log(`[proof] crash ${context}: ${killed.signal ?? `exit ${String(killed.code)}`}, whole again at ${Date.now() - started} ms`)
    }
    // Leftovers stay bounded however many times a publish or restore was cut short.
    for (const d of [a, b]) {
      const names = await readdir(d.state)
      const backups = names.filter(n => n.startsWith('index.sqlite.backup'))
      expect.soft(backups.length, `${d.state}: restore backups kept: ${backups.length}`).toBeLessThanOrEqual(5)
      const temps = existsSync(join(d.state, 'snapshots')) ? await readdir(join(d.state, 'snapshots')) : []
      expect.soft(temps, `${d.state}/snapshots after the last publish and restore`).toEqual([])
    }
    report('crash', { seed: rng.seed, moments: moments.length, files: (await walk(a.folder)).size, outcome })
  }, limit(90_000, 1_800_000))
})

/** CI: one random moment of each kind and the restore point; full: 54 random moments and every named point. */
function FULL_MOMENTS (named: Moment[], rng: ReturnType<typeof seeded>): Moment[] {
  const at = (kind: 'scan' | 'publish' | 'restore'): Moment => ({ kind, ms: 50 + rng.int(kind === 'scan' ? 1_500 : 2_000) })
  const random = (_: unknown, i: number): Moment => at(FULL ? rng.pick(['scan', 'publish', 'restore'] as const) : (['scan', 'publish', 'restore'] as const)[i % 3] as 'scan')
  const count = size(3, 54)
  // CI: the restore point only; test/e2e/publish-restore.test.ts kills a publish at each of its steps already.
  const chosen = size([named[named.length - 1] as Moment], named)
  return [...Array.from({ length: count }, random), ...chosen].sort(() => rng.next() - 0.5)
}
