// npm run bench -- lean: the daemon's memory and time to watching over many small files, beside syncthing
// on the same tree in the same run, runs interleaved (the order flips every run: the machine is shared).
import { spawn } from 'node:child_process'
import { mkdirSync, writeFileSync, rmSync, existsSync, readFileSync } from 'node:fs'
import { randomFillSync } from 'node:crypto'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { memOf, treeMemOf } from './data.mjs'
import { syncthingPresent, syncthingUntilIdle, syncthingVersion, stopSyncthing } from './syncthing-peer.mjs'

const CLI = fileURLToPath(new URL('../../dist/bin/cidsync.js', import.meta.url))
const FILES = Number(process.env.BENCH_LEAN_FILES ?? 100_000)
const PER_DIR = Number(process.env.BENCH_LEAN_PER_DIR ?? (FILES >= 1_000_000 ? 100 : 1_000))
const FILE_BYTES = Number(process.env.BENCH_LEAN_FILE_BYTES ?? 4096)
const RUNS = Number(process.env.BENCH_LEAN_RUNS ?? 3)
/** Idle RSS is read this long after the daemon is watching (after syncthing's folder is idle). */
const IDLE_MS = Number(process.env.BENCH_LEAN_IDLE_MS ?? 30_000)
/** The daemon runs with the environment its build's systemd unit gives it (MALLOC_ARENA_MAX, NODE_OPTIONS); BENCH_LEAN_UNIT_ENV=0 leaves it out. */
const UNIT_ENV = process.env.BENCH_LEAN_UNIT_ENV !== '0'
const TIMEOUT_MS = 1_800_000
/** Another build's dist/bin/cidsync.js, run interleaved as `before` (a before/after in one run). */
const BEFORE = process.env.BENCH_LEAN_BEFORE

function makeTree (dir) {
  const bytes = Buffer.alloc(FILE_BYTES)
  for (let i = 0; i < FILES; i++) {
    const sub = join(dir, `d${String(Math.floor(i / PER_DIR)).padStart(5, '0')}`)
    if (i % PER_DIR === 0) mkdirSync(sub, { recursive: true })
    randomFillSync(bytes)
    writeFileSync(join(sub, `f${i}.bin`), bytes)
  }
}

/** The `Environment=` lines of the user unit beside a build's dist/ (`systemd/cidsync-user.service`). */
function unitEnv (cli) {
  if (!UNIT_ENV) return {}
  const unit = join(dirname(cli), '..', '..', 'systemd', 'cidsync-user.service')
  if (!existsSync(unit)) return {}
  const env = {}
  for (const line of readFileSync(unit, 'utf8').split('\n')) {
    const m = /^Environment=([A-Z_]+)=(.*)$/.exec(line)
    if (m !== null) env[m[1]] = m[2]
  }
  return env
}

const sleep = (ms) => new Promise(resolve => setTimeout(resolve, ms))

/** Spawns the daemon; resolves at its `watching` line with ms from spawn to `index current` and to `watching`, and peaks. */
async function daemonUntilWatching (cli, config) {
  const env = { ...process.env, ...unitEnv(cli) }
  const started = performance.now()
  const child = spawn(process.execPath, [cli, 'daemon', '--config', config], { stdio: ['ignore', 'ignore', 'pipe'], env })
  let tail = ''
  let partial = ''
  const found = {}
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`no "watching" after ${TIMEOUT_MS} ms:\n${tail}`)) }, TIMEOUT_MS)
    child.stderr.on('data', (d) => {
      const lines = (partial + d.toString()).split('\n')
      partial = lines.pop()
      for (const line of lines) {
        tail = (tail + line + '\n').slice(-4000)
        if (line.includes('"index current"') && found.current === undefined) {
          found.current = { ms: performance.now() - started, event: JSON.parse(line), peak: memOf(child.pid).hwm }
        } else if (line.includes('"msg":"watching"')) {
          found.watching = { ms: performance.now() - started, event: JSON.parse(line), peak: memOf(child.pid).hwm }
        }
        // Either may come first: watching starts as soon as the index is current.
        if (found.current !== undefined && found.watching !== undefined) {
          clearTimeout(timer)
          resolve()
        }
      }
    })
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`daemon exited ${code}:\n${tail}`)) })
  })
  if (found.current.event.files !== FILES) {
    await stopDaemon(child)
    throw new Error(`indexed ${found.current.event.files} files, expected ${FILES}`)
  }
  return { child, current: found.current.ms, watching: Math.max(found.current.ms, found.watching.ms), peak: found.watching.peak, peakAtCurrent: found.current.peak }
}

async function stopDaemon (child) {
  if (child.exitCode !== null) return
  child.removeAllListeners('exit')
  const exited = new Promise(resolve => child.on('exit', resolve))
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
  await exited
  clearTimeout(timer)
}

async function cidsyncRun (cli, config, state) {
  rmSync(state, { recursive: true, force: true })
  const out = {}
  for (const kind of ['cold', 'restart']) {
    const run = await daemonUntilWatching(cli, config)
    await sleep(IDLE_MS)
    const mem = memOf(run.child.pid)
    // The peak is read again at the end: the first pass's garbage can outgrow what was resident at `watching`.
    out[kind] = { ...run, idle: mem.rss, peak: mem.hwm }
    await stopDaemon(run.child)
  }
  return out
}

async function syncthingRun (home, tree) {
  rmSync(home, { recursive: true, force: true })
  const out = {}
  for (const kind of ['cold', 'restart']) {
    const run = await syncthingUntilIdle(home, tree, FILES, { timeoutMs: TIMEOUT_MS })
    await sleep(IDLE_MS)
    const mem = treeMemOf(run.child.pid)
    out[kind] = { ms: run.ms, peak: mem.hwm, idle: mem.rss }
    await stopSyncthing(run)
  }
  rmSync(home, { recursive: true, force: true })
  return out
}

const mb = (bytes) => `${(bytes / 1e6).toFixed(0)} MB`
const s = (ms) => `${(ms / 1000).toFixed(2)} s`
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]
const span = (xs, fmt) => xs.length === 1 ? fmt(xs[0]) : `${fmt(Math.min(...xs))}-${fmt(Math.max(...xs))}`

export async function benchLean (root, report) {
  const tree = join(root, 'tree')
  const state = join(root, 'state')
  const config = join(root, 'lean.toml')
  const count = FILES.toLocaleString('en-US')
  const started = performance.now()
  makeTree(tree)
  console.log(`  (${count} files of ${FILE_BYTES} B in ${Math.ceil(FILES / PER_DIR)} dirs made in ${s(performance.now() - started)}; the daemon's environment from its unit: ${JSON.stringify(unitEnv(CLI))})`)
  writeFileSync(config, `state_dir = "${state}"\nlog_level = "info"\n[[folders]]\nname = "tree"\npath = "${tree}"\n[status]\nlisten = "127.0.0.1:0"\n`)
  // BENCH_LEAN_PEER=0 leaves syncthing out (its first scan of 1,000,000 files can take over 30 min on a loaded machine).
  const peer = process.env.BENCH_LEAN_PEER !== '0' && syncthingPresent()
  if (!peer) console.log('  (syncthing left out: no /usr/bin/syncthing (`apt-get install -y syncthing`) or BENCH_LEAN_PEER=0; the ratios are skipped)')
  else console.log(`  (peer: ${syncthingVersion()})`)
  const ours = []
  const before = []
  const theirs = []
  const contenders = [...(peer ? ['syncthing'] : []), 'cidsync', ...(BEFORE !== undefined ? ['before'] : [])]
  for (let run = 0; run < RUNS; run++) {
    const order = run % 2 === 0 ? contenders : [...contenders].reverse()
    for (const who of order) {
      if (who !== 'syncthing') {
        const r = await cidsyncRun(who === 'before' ? BEFORE : CLI, config, state)
        ;(who === 'before' ? before : ours).push(r)
        for (const k of ['cold', 'restart']) console.log(`  run ${run + 1} ${who} ${k}: current ${s(r[k].current)}, watching +${s(r[k].watching - r[k].current)}, peak ${mb(r[k].peak)} (${mb(r[k].peakAtCurrent)} at current), idle ${mb(r[k].idle)}`)
      } else {
        const r = await syncthingRun(join(root, 'syncthing'), tree)
        theirs.push(r)
        for (const k of ['cold', 'restart']) console.log(`  run ${run + 1} syncthing ${k}: idle folder ${s(r[k].ms)}, peak ${mb(r[k].peak)}, idle ${mb(r[k].idle)}`)
      }
    }
  }
  rmSync(state, { recursive: true, force: true })

  const pick = (runs, kind, key) => runs.map(r => r[kind][key])
  const row = (name, kind, key, fmt, target) => {
    const a = pick(ours, kind, key)
    if (!peer) return report(name, span(a, fmt), '-', '-', target)
    const b = pick(theirs, kind, key)
    report(name, span(a, fmt), `syncthing ${span(b, fmt)}`, `${(median(a) / median(b)).toFixed(2)}x (medians)`, target)
    if (before.length > 0) {
      const c = pick(before, kind, key)
      report(`  the same, before`, span(c, fmt), `syncthing ${span(b, fmt)}`, `${(median(c) / median(b)).toFixed(2)}x (medians)`, target)
    }
  }
  const small = FILES < 1_000_000
  row(`idle RSS ${IDLE_MS / 1000} s after watching, restart over ${count} files`, 'restart', 'idle', mb, small ? '<= 1.0x' : '<= 0.75x')
  row(`idle RSS ${IDLE_MS / 1000} s after watching, first index of ${count} files`, 'cold', 'idle', mb, small ? '<= 1.0x' : '<= 0.75x')
  row(`peak RSS indexing ${count} files (to watching)`, 'cold', 'peak', mb, '<= 1.0x')
  row(`peak RSS restart over ${count} files`, 'restart', 'peak', mb, '<= 1.0x')
  if (peer) {
    const a = pick(ours, 'cold', 'current')
    const b = theirs.map(r => r.cold.ms)
    report(`first index of ${count} files: spawn to index current (syncthing: to folder idle)`, span(a, s), `syncthing ${span(b, s)}`, `${(median(a) / median(b)).toFixed(2)}x the time`, 'report')
  }
  for (const [who, runs] of [['', ours], [' (before)', before]]) for (const kind of ['cold', 'restart']) {
    if (runs.length === 0) continue
    const toCurrent = pick(runs, kind, 'current')
    const after = runs.map(r => r[kind].watching - r[kind].current)
    const ratios = runs.map(r => r[kind].watching / r[kind].current)
    report(`${kind === 'cold' ? 'first index' : 'restart'}${who}: index current to watching`, `+${span(after, s)}`, `to current ${span(toCurrent, s)}`, `${span(ratios, x => x.toFixed(2))}x the time to current`, '<= 1.5x')
  }
}
