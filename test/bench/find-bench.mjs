// npm run bench -- find: search, where, dupes and a file's timeline over ROWS rows of each of 3
// devices and PUBLISHES publishes of history, the dashboard's round trip, and `restic find` over
// a repository of the same tree in SNAPSHOTS snapshots. Size knobs: BENCH_FIND_ROWS (default
// 1,000,000), BENCH_FIND_PUBLISHES (1,000), BENCH_FIND_SNAPSHOTS (30), BENCH_FIND_RESTIC_FILES
// (the tree restic backs up: default ROWS, empty files of the same paths).
import { spawnSync } from 'node:child_process'
import { mkdirSync, writeFileSync, existsSync } from 'node:fs'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { benchEntry, fillIndex } from './data.mjs'

const DIST = new URL('../../dist/', import.meta.url)
const CLI = fileURLToPath(new URL('bin/cidsync.js', DIST))
const ROWS = Number(process.env.BENCH_FIND_ROWS ?? 1_000_000)
const PUBLISHES = Number(process.env.BENCH_FIND_PUBLISHES ?? 1_000)
const SNAPSHOTS = Number(process.env.BENCH_FIND_SNAPSHOTS ?? 30)
const RESTIC_FILES = Number(process.env.BENCH_FIND_RESTIC_FILES ?? ROWS)
const DEVICES = ['d1000000-0000-4000-8000-000000000001', 'd2000000-0000-4000-8000-000000000002', 'd3000000-0000-4000-8000-000000000003']
const QUERIES = 60

const count = (n) => n.toLocaleString('en-US')
const ms = (t) => `${t.toFixed(1)} ms`
const p95 = (values) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * 0.95))]
const p50 = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
/** Deterministic "random" numbers, so runs compare. */
let seed = 12345
const next = (n) => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed % n }

function timeSpawn (command, args, options = {}) {
  const started = performance.now()
  const result = spawnSync(command, args, { encoding: 'utf8', maxBuffer: 256 << 20, timeout: 600_000, ...options })
  if (result.status !== 0 && result.status !== 3) throw new Error(`${command} ${args.join(' ')} exited ${result.status}: ${result.stderr}`)
  return { ms: performance.now() - started, stdout: result.stdout }
}

export async function benchFind (root, report) {
  const { openIndex } = await import(new URL('index/index.js', DIST))
  const { SearchCache, HistoryRows, find, where, dupes, fileLog, FindService } = await import(new URL('find/index.js', DIST))
  const { StatusServer } = await import(new URL('daemon/index.js', DIST))
  const state = join(root, 'find-state')
  mkdirSync(state, { recursive: true, mode: 0o700 })
  const index = openIndex(join(state, 'index.sqlite'))
  let t = performance.now()
  // Each device holds the same library (the worst case for dupes: every CID on 3 devices), its own rows.
  for (const device of DEVICES) fillIndex(index, device, ROWS, `host-${device.slice(0, 2)}`)
  console.log(`  (filled ${count(ROWS)} rows x ${DEVICES.length} devices in ${ms(performance.now() - t)})`)

  const cache = new SearchCache(join(state, 'search.sqlite'))
  t = performance.now()
  cache.catchUp(index)
  report(`search cache built lazily from ${count(ROWS * 3)} rows (first search only)`, ms(performance.now() - t), '-', '-', 'report')
  // One row changed: what every later search pays to follow the index.
  index.entries.apply(DEVICES[0], [{ ...benchEntry(7), size: 7 }])
  t = performance.now()
  cache.catchUp(index)
  report('search cache catching up one changed row', ms(performance.now() - t), '-', '-', 'report')

  const substring = []
  for (let i = 0; i < QUERIES; i++) {
    const pattern = i % 3 === 0 ? `IMG_${next(ROWS)}` : i % 3 === 1 ? `${2000 + next(25)}/${String(next(1000)).padStart(3, '0')}` : `_${next(ROWS)}.jp`
    const started = performance.now()
    cache.catchUp(index)
    find(cache, index, { pattern })
    substring.push(performance.now() - started)
  }
  report(`find substring over ${count(ROWS * 3)} rows, ${QUERIES} queries`, `p95 ${ms(p95(substring))}`, `p50 ${ms(p50(substring))}`, '-', 'p95 < 100 ms')
  const glob = []
  for (let i = 0; i < 10; i++) {
    const started = performance.now()
    find(cache, index, { pattern: `IMG_${next(ROWS)}*.jpg` })
    glob.push(performance.now() - started)
  }
  report('find glob IMG_n*.jpg', `p95 ${ms(p95(glob))}`, '-', '-', 'report')

  const whereTimes = []
  for (let i = 0; i < QUERIES; i++) {
    const cid = benchEntry(next(ROWS)).cid
    const started = performance.now()
    cache.catchUp(index)
    const found = where(cache, index, cid)
    whereTimes.push(performance.now() - started)
    if (found.holders.length !== 3) throw new Error(`where ${cid}: ${found.holders.length} holders, expected 3`)
  }
  report('where CID', `p95 ${ms(p95(whereTimes))}`, '-', '-', '< 20 ms')

  t = performance.now()
  const d = dupes(cache, { own: DEVICES[0], limit: 100 })
  report(`dupes over ${count(ROWS * 3)} rows (${count(ROWS)} groups)`, ms(performance.now() - t), '-', `${count(d.totalReclaimable)} B reclaimable`, '< 5 s')

  // History kept: every row once at its base, and one file changed in each of PUBLISHES publishes
  // (what `cidsync log` keeps from the fetched segments; fetching is the CLI test's, not timed here).
  const history = new HistoryRows(join(state, 'history-rows.sqlite'))
  t = performance.now()
  history.db.exec(`ATTACH DATABASE '${join(state, 'index.sqlite')}' AS idx`)
  history.db.exec('INSERT OR IGNORE INTO versions (folder, path, device_id, seq, size, mtime_ms, cid, deleted, updated_at) SELECT folder, path, device_id, seq, size, mtime_ms, cid, deleted, updated_at FROM idx.entries')
  history.db.exec('DETACH DATABASE idx')
  const hot = benchEntry(42)
  const put = history.db.prepare('INSERT INTO versions (folder, path, device_id, seq, size, mtime_ms, cid, deleted, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?)')
  history.db.transaction(() => { for (let p = 0; p < PUBLISHES; p++) put.run(hot.folder, hot.path, DEVICES[p % 3], ROWS + 10 + p, 100 + p, hot.mtimeMs + p, `${hot.cid.slice(0, -6)}${String(p).padStart(6, '0')}`, Date.now() - (PUBLISHES - p) * 60_000) })()
  console.log(`  (history rows kept in ${ms(performance.now() - t)})`)
  const logTimes = []
  for (let i = 0; i < 20; i++) {
    const started = performance.now()
    const versions = fileLog(index, history, hot.folder, hot.path)
    logTimes.push(performance.now() - started)
    if (versions.length < PUBLISHES) throw new Error(`log: ${versions.length} versions`)
  }
  report(`log PATH across ${count(PUBLISHES)} publishes (cached)`, `p95 ${ms(p95(logTimes))}`, '-', '-', '< 50 ms')
  history.close()

  // The dashboard's round trip: GET /search on the status endpoint, with the token.
  const service = new FindService(() => index, state)
  const server = new StatusServer({ status: () => ({}), token: 't0ken', find: service })
  const bound = await server.listen({ kind: 'tcp', host: '127.0.0.1', port: 0 })
  try {
    const rounds = []
    for (let i = 0; i < QUERIES; i++) {
      const started = performance.now()
      const answer = await fetch(`http://127.0.0.1:${bound.port}/search?q=IMG_${next(ROWS)}`, { headers: { authorization: 'Bearer t0ken' } })
      await answer.json()
      rounds.push(performance.now() - started)
      if (!answer.ok) throw new Error(`GET /search answered ${answer.status}`)
    }
    report('dashboard search round trip (GET /search)', `p95 ${ms(p95(rounds))}`, '-', '-', '< 150 ms')
  } finally {
    await server.close()
    service.close()
  }
  cache.close()
  index.close()

  // cidsync find as a user runs it (spawn to exit) beside restic find over the same tree in SNAPSHOTS snapshots.
  if (!existsSync('/usr/bin/restic')) { console.log('  (no /usr/bin/restic: the comparison is skipped)'); return }
  const tree = join(root, 'restic-tree')
  for (let i = 0; i < RESTIC_FILES; i++) {
    const e = benchEntry(i)
    const file = join(tree, e.folder, e.path)
    if (i < 25 * 1000) mkdirSync(dirname(file), { recursive: true })
    writeFileSync(file, '')
  }
  const repo = join(root, 'restic-repo')
  const env = { ...process.env, RESTIC_PASSWORD: 'bench', RESTIC_CACHE_DIR: join(root, 'restic-cache') }
  timeSpawn('restic', ['init', '--repo', repo], { env })
  t = performance.now()
  for (let s = 0; s < SNAPSHOTS; s++) {
    writeFileSync(join(tree, 'photos', `changed-${s}.txt`), String(s))
    timeSpawn('restic', ['backup', '--repo', repo, '--quiet', tree], { env })
  }
  console.log(`  (restic: ${count(RESTIC_FILES)} files in ${SNAPSHOTS} snapshots made in ${ms(performance.now() - t)})`)
  const pattern = `IMG_${next(RESTIC_FILES)}.jpg`
  const restic = timeSpawn('restic', ['find', '--repo', repo, pattern], { env })
  const config = join(root, 'find-bench.toml')
  writeFileSync(config, `state_dir = "${state}"\n[status]\nlisten = "127.0.0.1:0"\n`)
  const ours = timeSpawn(process.execPath, [CLI, 'find', pattern, '--config', config])
  report(`find ${pattern}: cidsync find (spawn to exit, ${count(ROWS * 3)} rows) vs restic find (${count(RESTIC_FILES)} files x ${SNAPSHOTS} snapshots)`, ms(ours.ms), `restic ${ms(restic.ms)}`, `${(restic.ms / ours.ms).toFixed(1)}x faster`, 'aim 100x')
  report('  in process (the query itself, p50 above)', ms(p50(substring)), `restic ${ms(restic.ms)}`, `${(restic.ms / p50(substring)).toFixed(0)}x faster`, 'aim 100x')
}
