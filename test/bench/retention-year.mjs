// The retention bench's simulated year: a tree with 1% of its files changed each day, published on
// an injected clock, forgotten and pruned on the default schedule (Sundays at 05:17) under the
// policy `cidsync init` writes. It reports the bytes the service holds, month by month, beside
// what the policy keeps plus the margin, and the time of `history`, `find --at` and `log` after.
//
// The issue publishes every 15 minutes (35,000 publishes a year); a publish here costs a few tenths
// of a second, so the default is one every other day (BENCH_RETENTION_PER_DAY = 0.5), over the
// whole calendar; BENCH_RETENTION_DAYS shortens the year for a quick look.
// The service stamps uploads with the real clock, and the simulated year lies ahead of it: so the
// margin holds back only the chains a forget replaced, never content. Under this policy every
// publish of the last 48 hours is kept anyway, which covers the day of margin.
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { INIT_POLICY, openDevice, writeDevice } from './retention-device.mjs'
import { count, du, mb, median, seconds, timed, Tree, Versions } from './retention-tree.mjs'

const CLI = fileURLToPath(new URL('../../dist/bin/cidsync.js', import.meta.url))
const PER_DAY = Number(process.env.BENCH_RETENTION_PER_DAY ?? 0.5)
const DAYS = Number(process.env.BENCH_RETENTION_DAYS ?? 365)
const DAY = 86_400_000
const MARGIN = DAY
/** Spawned runs of each command after the year: the first reads the history cold. */
const QUERY_ROUNDS = 4

export async function benchYear (root, report, scale) {
  const files = Math.max(100, Math.round(100_000 * scale))
  const perDay = Math.max(1, Math.round(files / 100))
  // The first of a month at least two days ahead: every upload is then older than the margin.
  const soon = new Date(Date.now() + 2 * DAY)
  const start = Date.UTC(soon.getUTCFullYear(), soon.getUTCMonth() + 1, 1)
  console.log(`simulated year: ${count(files)} files (scale ${scale}), ${perDay} changed a day, ${PER_DAY} publish${PER_DAY === 1 ? '' : 'es'} a day ` +
    `(the issue: 96, every 15 minutes), ${DAYS} days from ${new Date(start).toISOString().slice(0, 10)}; forget and prune on Sundays at 05:17 UTC`)
  const tree = new Tree(join(root, 'year-tree'), files, 777)
  const dir = join(root, 'year-device')
  const config = writeDevice(dir, tree.dir, INIT_POLICY)
  const versions = new Versions(tree.dir)
  const device = await openDevice(config)
  const runs = []
  let publishes = 0
  let at = start
  let month = new Date(start).toISOString().slice(0, 7)
  try {
    for (const e of calendar(start)) {
      at = e.at
      const now = new Date(at).toISOString().slice(0, 7)
      if (now !== month) {
        const last = runs.at(-1)
        console.log(`  ${month}: ${publishes} publishes so far; the last prune kept ${last?.kept ?? '-'}, the service held ${last === undefined ? '-' : mb(last.held.content + last.held.index)}`)
        month = now
      }
      if (e.retain) { runs.push(await retainAt(device, dir, new Date(at), versions)); continue }
      // 1% of the files a day, spread over the day's publishes.
      const n = Math.floor((e.q + 1) * perDay / PER_DAY) - Math.floor(e.q * perDay / PER_DAY)
      const changed = publishes === 0 ? undefined : tree.churn({ changed: n, hot: files })
      await device.publishAt(new Date(at), changed)
      versions.note(changed ?? [...tree.versions.keys()].map(i => tree.pathOf(i)), at)
      publishes++
    }
  } finally {
    await device.close()
  }
  if (runs.length === 0) return
  reportCurve(runs, report)
  const times = runs.map(r => r.ms)
  const part = (key) => seconds(median(runs.map(r => r.split[key])))
  report(`  each forget + prune of the year (${runs.length}, in process, reclaim included): median / slowest`, `${seconds(median(times))} / ${seconds(Math.max(...times))}`,
    `medians: forget ${part('forget')}, prune ${part('prune')}, reclaim ${part('reclaim')}`, '-', 'report')
  report('  each forget: kept publishes sealed again; each prune: segments read (medians)', `${median(runs.map(r => r.relinked))} of ${median(runs.map(r => r.kept))} sealed again`,
    `${median(runs.map(r => r.segmentsRead))} segments read`, '-', 'report')
  const hottest = versions.busiest()
  await queries(config, report, { at, mid: new Date(start + DAYS * DAY / 2).toISOString(), path: `tree/${hottest}`, kept: runs.at(-1)?.kept })
}

/** The year's events in time order: PER_DAY publishes a day, evenly spaced, and a retention run every Sunday at 05:17. */
function calendar (start) {
  const events = []
  const publishes = Math.floor(DAYS * PER_DAY)
  for (let q = 0; q < publishes; q++) events.push({ at: start + Math.round((q + 0.5) * DAY / PER_DAY), q, retain: false })
  for (let d = 0; d < DAYS; d++) {
    const day = start + d * DAY
    if (new Date(day).getUTCDay() === 0) events.push({ at: day + (5 * 60 + 17) * 60_000, retain: true })
  }
  return events.sort((a, b) => a.at - b.at)
}

/** One scheduled run: forget, prune, reclaim; then what the service holds beside what the policy keeps. */
async function retainAt (device, dir, now, versions) {
  const started = performance.now()
  const { forgot, pruned, ms: split } = await device.retain(now)
  const ms = performance.now() - started
  const keptTimes = forgot.decisions.filter(d => d.keep).map(d => d.publish.time.getTime())
  const held = await device.held()
  return {
    at: now, ms, split, relinked: forgot.relinked, segmentsRead: pruned.segmentsRead, kept: forgot.kept, held, disk: du(join(dir, 'service')),
    keptContent: versions.keptBytes(keptTimes, now.getTime() - MARGIN)
  }
}

/** The bytes held after the last prune of each month, beside the content the policy keeps. */
function reportCurve (runs, report) {
  const byMonth = new Map()
  for (const r of runs) byMonth.set(r.at.toISOString().slice(0, 7), r)
  console.log('  month   | kept | content held | index held | service disk | content kept (policy + margin)')
  for (const [month, r] of byMonth) {
    console.log(`  ${month} | ${String(r.kept).padStart(4)} | ${mb(r.held.content).padStart(12)} | ${mb(r.held.index).padStart(10)} | ${mb(r.disk).padStart(12)} | ${mb(r.keptContent)}`)
  }
  for (const [month, r] of byMonth) {
    report(`  ${month}: held after the prune (${r.kept} publishes kept)`, `${mb(r.held.content)} content + ${mb(r.held.index)} index`, `policy + margin ${mb(r.keptContent)} content`,
      `${(r.held.content / r.keptContent).toFixed(2)}x`, '<= 1.0x (content)')
  }
}

/** `history`, `find --at` and `log` spawned after the year, beside `cidsync --version` (Node's start and the CLI's load). */
async function queries (config, report, { at, mid, path, kept }) {
  const env = { ...process.env, CIDSYNC_TEST_CLOCK: new Date(at).toISOString() }
  const commands = {
    start: ['--version'],
    history: ['history', '--config', config, '--limit', '1000'],
    find: ['find', 'f1', '--at', mid, '--config', config],
    log: ['log', path, '--config', config]
  }
  const ms = Object.fromEntries(Object.keys(commands).map(k => [k, []]))
  for (let round = 0; round < QUERY_ROUNDS; round++) {
    for (const [name, args] of Object.entries(commands)) ms[name].push((await timed(process.execPath, [CLI, ...args], { env })).ms)
  }
  const warm = (name) => median(ms[name].slice(1))
  console.log(`  spawned, cold then warm (ms): ${Object.entries(ms).map(([k, v]) => `${k} ${v.map(x => x.toFixed(0)).join('/')}`).join('; ')}`)
  const start = warm('start')
  const labels = { history: `history of the ${kept} kept publishes`, find: `find --at ${mid.slice(0, 10)} (a forgotten time)`, log: `log of the most changed file (${path})` }
  for (const name of ['history', 'find', 'log']) {
    report(`  ${labels[name]}: spawned, median of ${QUERY_ROUNDS - 1} warm (cold ${ms[name][0].toFixed(0)} ms)`, `${warm(name).toFixed(0)} ms`, `cidsync --version ${start.toFixed(0)} ms`,
      `${(warm(name) - start).toFixed(0)} ms over start-up`, '< 100 ms')
  }
}
