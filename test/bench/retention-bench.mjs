// npm run bench -- retention: forget and prune (issue 30, "Speed and scale").
// 1. A history of publishes with churn, backed up by restic at the same moments, then a policy
//    forgetting 90%: `cidsync forget --prune` (spawned, embedded service) beside
//    `restic forget --keep-last K --prune`, at two history lengths; times and peak memory.
// 2. A simulated year (retention-year.mjs).
// The full scale (1,000,000 entries, 10 GiB, 1,000 publishes) is BENCH_RETENTION_SCALE=1
// with BENCH_RETENTION_PUBLISHES=1000. The defaults (scale 0.002, 30 publishes) run in about five
// minutes on two busy cores. Without restic (`apt-get install restic`) the ratios to it are skipped.
import { spawnSync } from 'node:child_process'
import { cpSync, renameSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { openDevice, writeDevice } from './retention-device.mjs'
import { count, du, mb, median, seconds, timed, Tree, Versions } from './retention-tree.mjs'
import { benchYear } from './retention-year.mjs'
import { benchRetentionIndex } from './retention-index.mjs'
import { benchRetentionListing } from './retention-listing.mjs'

const CLI = fileURLToPath(new URL('../../dist/bin/cidsync.js', import.meta.url))
export const SCALE = Number(process.env.BENCH_RETENTION_SCALE ?? 0.002)
const ENTRIES = Math.max(100, Math.round(1_000_000 * SCALE))
/** The longer history; the shorter one is a quarter of it, copied on the way. */
const PUBLISHES = Number(process.env.BENCH_RETENTION_PUBLISHES ?? 30)
/** Runs of each tool on each history, on fresh copies, in turn. */
const ROUNDS = Math.max(1, Number(process.env.BENCH_RETENTION_ROUNDS ?? 3))
const SHORT = Math.max(2, Math.round(PUBLISHES / 4))
/** Each publish: 1% of the files rewritten, drawn from a hot 2% (work in progress); 0.1% added and 0.1% removed. */
const CHURN = { changed: Math.max(1, Math.round(ENTRIES / 100)), hot: Math.max(1, Math.round(ENTRIES / 50)), added: Math.round(ENTRIES / 1000), removed: Math.round(ENTRIES / 1000) }
const RESTIC_ENV = { ...process.env, RESTIC_PASSWORD: 'bench' }
const ratio = (a, b) => b === undefined ? 'restic missing' : `${(a / b).toFixed(2)}x`

export async function benchRetention (root, report) {
  const hasRestic = spawnSync('restic', ['version']).status === 0
  if (!hasRestic) console.log('restic is not installed (apt-get install restic): the ratios to it are skipped')
  console.log(`retention scale ${SCALE}: ${count(ENTRIES)} files of ${mb(10 * 2 ** 30 * SCALE)}, ${PUBLISHES} and ${SHORT} publishes, ` +
    `each rewriting ${count(CHURN.changed)} of a hot ${count(CHURN.hot)}, adding ${CHURN.added} and removing ${CHURN.removed}`)
  const histories = await buildHistories(root, hasRestic, report)
  const results = []
  for (const h of histories) results.push(await forgetBoth(h, hasRestic))
  for (const { h, rounds } of results) {
    const ours = summed(rounds.map(r => r.ours))
    const theirs = hasRestic ? summed(rounds.map(r => r.theirs)) : undefined
    const each = hasRestic ? rounds.map(r => ratio(r.ours.ms, r.theirs.ms)).join(', ') : ''
    report(`forget --prune of ${h.n} publishes to keep_last ${h.keep} (${count(ENTRIES)} files, scale ${SCALE}; median of ${rounds.length}, in turn)`, seconds(ours.ms),
      theirs === undefined ? '-' : `restic forget --prune ${seconds(theirs.ms)} (each round: ${each})`, ratio(ours.ms, theirs?.ms), '<= 0.5x')
    report(`  peak RSS of cidsync forget --prune (${h.n} publishes; anonymous part; the highest)`, `${mb(ours.peak)} (${mb(ours.anon)})`, theirs === undefined ? '-' : `restic ${mb(theirs.peak)}`,
      ratio(ours.peak, theirs?.peak), '<= 300 MB')
    report('  disk before and after (the embedded service; the restic repository)', `${mb(ours.disk[0])} → ${mb(ours.disk[1])}`, theirs === undefined ? '-' : `restic ${mb(theirs.disk[0])} → ${mb(theirs.disk[1])}`, '-', 'report')
    const kept = h.versions.keptBytes(Array.from({ length: h.keep }, (_, i) => h.n - 1 - i))
    report(`  content held after, beside the ${mb(kept)} of files the kept publishes hold`, `${mb(ours.content)} (${(ours.content / kept).toFixed(2)}x)`,
      theirs === undefined ? '-' : `restic repository ${mb(theirs.size)} (${(theirs.size / kept).toFixed(2)}x)`, ratio(ours.content, theirs?.size), 'report')
  }
  const [short, long] = results.map(({ h, rounds }) => ({ h, ours: summed(rounds.map(r => r.ours)) }))
  // What the CLI's start costs: much of it at small scales.
  const starts = []
  for (let i = 0; i < 3; i++) starts.push((await timed(process.execPath, [CLI, '--version'])).ms)
  const start = median(starts)
  report('  the CLI\'s start (cidsync --version, spawned, median of 3)', seconds(start), `forget --prune of ${long.h.n} ${seconds(long.ours.ms)}`, `${(start / long.ours.ms * 100).toFixed(0)}% of it`, 'report')
  report(`  peak RSS of cidsync, ${long.h.n} against ${short.h.n} publishes`, mb(long.ours.peak), mb(short.ours.peak), `${(long.ours.peak / short.ours.peak).toFixed(2)}x`, 'flat (~1.0x)')
  await benchYear(root, report, SCALE)
  await benchRetentionIndex(root, report)
  await benchRetentionListing(root, report)
}

/** One history of PUBLISHES publishes, each backed up by restic after the same change; a copy at SHORT. */
async function buildHistories (root, hasRestic, report) {
  const tree = new Tree(join(root, 'retention-tree'), ENTRIES)
  const long = { n: PUBLISHES, dir: join(root, 'retention-long'), repo: join(root, 'restic-long'), tree: tree.dir }
  const short = { n: SHORT, dir: join(root, 'retention-short'), repo: join(root, 'restic-short'), tree: tree.dir }
  const config = writeDevice(long.dir, tree.dir, 'keep_last = 1\nprune_margin = "0s"\n')
  if (hasRestic) await timed('restic', ['init', '--repo', long.repo], { env: RESTIC_ENV })
  let device = await openDevice(config)
  const took = { ours: 0, theirs: 0 }
  // The publishes' versions, by the publish's number: what keep_last K holds is the last K of them.
  const versions = new Versions(tree.dir)
  long.versions = short.versions = versions
  try {
    for (let p = 0; p < PUBLISHES; p++) {
      const changed = p === 0 ? undefined : tree.churn(CHURN)
      let started = performance.now()
      await device.publishAt(new Date(), changed)
      took.ours += performance.now() - started
      versions.note(changed ?? [...tree.versions.keys()].map(i => tree.pathOf(i)), p)
      started = performance.now()
      if (hasRestic) await timed('restic', ['backup', '--repo', long.repo, '--host', 'bench', '--quiet', tree.dir], { env: RESTIC_ENV })
      took.theirs += performance.now() - started
      if (p + 1 === SHORT) {
        await device.close()
        cpSync(long.dir, short.dir, { recursive: true })
        if (hasRestic) cpSync(long.repo, short.repo, { recursive: true })
        device = await openDevice(config)
      }
    }
  } finally {
    await device.close()
  }
  report(`building the history: ${PUBLISHES} publishes (in process, content stored)`, seconds(took.ours), hasRestic ? `restic backup ×${PUBLISHES} ${seconds(took.theirs)}` : '-',
    hasRestic ? ratio(took.ours, took.theirs) : 'restic missing', 'report')
  return [short, long]
}

/** The bytes of the content objects (sealed packs of files) the embedded service lists, read from its database. */
function listedContent (serviceDir) {
  const db = new Database(join(serviceDir, 'service.sqlite'), { readonly: true })
  try {
    return db.prepare("SELECT coalesce(sum(size), 0) FROM files WHERE file_name LIKE '%.sealed'").pluck().get()
  } finally {
    db.close()
  }
}

/**
 * `cidsync forget --prune`, and restic's forget with prune, on one history, ROUNDS times each on
 * fresh copies, the two in turn: each order runs as often, so neither gains from the other's page
 * cache or from the machine's load of the moment. Each run is checked to keep what the policy says.
 */
async function forgetBoth (h, hasRestic) {
  h.keep = Math.max(1, Math.round(h.n / 10))
  const config = writeDevice(h.dir, h.tree, `keep_last = ${h.keep}\nprune_margin = "0s"\n`)
  // Kept with the rest (BENCH_KEEP=1): the histories as they were, to profile forget and prune on a copy.
  const pristine = { dir: `${h.dir}-before-forget`, repo: `${h.repo}-before-forget` }
  renameSync(h.dir, pristine.dir)
  if (hasRestic) renameSync(h.repo, pristine.repo)
  const ours = async () => {
    fresh(pristine.dir, h.dir)
    const before = du(join(h.dir, 'service'))
    const run = await timed(process.execPath, [CLI, 'forget', '--prune', '--config', config, '--json'])
    const pruned = JSON.parse(run.stdout).prune
    const history = JSON.parse((await timed(process.execPath, [CLI, 'history', '--config', config, '--json', '--limit', '10000'])).stdout)
    if (history.length !== h.keep) throw new Error(`cidsync kept ${history.length} publishes, not ${h.keep}`)
    console.log(`  cidsync, ${h.n} publishes: forget --prune ${seconds(run.ms)}; deleted ${JSON.stringify(pruned.deleted)}, ${mb(pruned.bytes)} listed`)
    return { ms: run.ms, peak: run.peak, anon: run.anon, disk: [before, du(join(h.dir, 'service'))], content: listedContent(join(h.dir, 'service')) }
  }
  const theirs = async () => {
    fresh(pristine.repo, h.repo)
    const before = du(h.repo)
    const run = await timed('restic', ['forget', '--repo', h.repo, '--keep-last', String(h.keep), '--prune'], { env: RESTIC_ENV })
    const snapshots = JSON.parse((await timed('restic', ['snapshots', '--repo', h.repo, '--json'], { env: RESTIC_ENV })).stdout)
    if (snapshots.length !== h.keep) throw new Error(`restic kept ${snapshots.length} snapshots, not ${h.keep}`)
    console.log(`  restic, ${h.n} snapshots: forget --prune ${seconds(run.ms)}`)
    const size = du(h.repo)
    return { ms: run.ms, peak: run.peak, disk: [before, size], size }
  }
  const rounds = []
  for (let r = 0; r < ROUNDS; r++) {
    if (!hasRestic) rounds.push({ ours: await ours() })
    else if (r % 2 === 1) rounds.push({ theirs: await theirs(), ours: await ours() })
    else rounds.push({ ours: await ours(), theirs: await theirs() })
  }
  if (process.env.BENCH_KEEP !== '1') for (const path of Object.values(pristine)) rmSync(path, { recursive: true, force: true })
  return { h, rounds }
}

/** The runs of one tool: the median time, the highest peaks, the last run's disk and content. */
function summed (runs) {
  const last = runs[runs.length - 1]
  return { ...last, ms: median(runs.map(r => r.ms)), peak: Math.max(...runs.map(r => r.peak)), anon: Math.max(...runs.map(r => r.anon ?? 0)) }
}

/** `to` made again as a copy of `from`. */
function fresh (from, to) {
  rmSync(to, { recursive: true, force: true })
  cpSync(from, to, { recursive: true })
}
