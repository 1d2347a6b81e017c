import { spawn, spawnSync } from 'node:child_process'
import { mkdirSync, writeFileSync, rmSync } from 'node:fs'
import { rssOf } from './data.mjs'
import { randomFillSync } from 'node:crypto'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const CLI = fileURLToPath(new URL('../../dist/bin/cidsync.js', import.meta.url))
const FILES = Number(process.env.BENCH_FILES ?? 100_000)
const PER_DIR = 1000
/** RSS is read twice: soon after watching starts, and once idle threads have stopped (BENCH_INDEX_SETTLED_MS, 30 s). */
const SETTLED_RSS_MS = Number(process.env.BENCH_INDEX_SETTLED_MS ?? 30_000)
const EARLY_RSS_MS = Math.min(5_000, SETTLED_RSS_MS)

function makeTree (dir) {
  const bytes = Buffer.alloc(4096)
  for (let i = 0; i < FILES; i++) {
    const sub = join(dir, `d${String(Math.floor(i / PER_DIR)).padStart(3, '0')}`)
    if (i % PER_DIR === 0) mkdirSync(sub, { recursive: true })
    randomFillSync(bytes)
    writeFileSync(join(sub, `f${i}.bin`), bytes)
  }
}

function timeShell (command) {
  const started = performance.now()
  const result = spawnSync('bash', ['-c', command], { stdio: ['ignore', 'ignore', 'inherit'] })
  if (result.status !== 0) throw new Error(`${command} failed`)
  return performance.now() - started
}

/** Spawns the daemon and resolves when it logs `index current`; answers ms from spawn, the event and the child. */
async function daemonUntilCurrent (config) {
  const started = performance.now()
  const child = spawn(process.execPath, [CLI, 'daemon', '--config', config], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  const event = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`no "index current" after 120 s:\n${stderr}`)) }, 120_000)
    child.stderr.on('data', (d) => {
      stderr += d.toString()
      for (const line of stderr.split('\n')) {
        if (!line.includes('"index current"')) continue
        clearTimeout(timer)
        resolve(JSON.parse(line))
        return
      }
    })
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`daemon exited ${code}:\n${stderr}`)) })
  })
  return { ms: performance.now() - started, event, child }
}

async function stop (child) {
  child.removeAllListeners('exit')
  const exited = new Promise(resolve => child.on('exit', resolve))
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
  await exited
  clearTimeout(timer)
}

const seconds = (ms) => `${(ms / 1000).toFixed(2)} s`

export async function benchIndex (root, report) {
  const tree = join(root, 'tree')
  makeTree(tree)
  const config = join(root, 'bench.toml')
  writeFileSync(config, `state_dir = "${join(root, 'state')}"\nlog_level = "info"\n[[folders]]\nname = "tree"\npath = "${tree}"\n[status]\nlisten = "127.0.0.1:0"\n`)
  spawnSync('sync')
  const sha = `find ${tree} -type f -print0 | xargs -0 sha256sum > /dev/null`
  timeShell(sha) // page cache warm for both
  const baseline = Math.min(timeShell(sha), timeShell(sha))

  let cold
  for (let run = 0; run < 2; run++) {
    rmSync(join(root, 'state'), { recursive: true, force: true })
    const attempt = await daemonUntilCurrent(config)
    if (attempt.event.files !== FILES) throw new Error(`indexed ${attempt.event.files} files, expected ${FILES}`)
    await stop(attempt.child)
    if (cold === undefined || attempt.ms < cold.ms) cold = attempt
  }
  report(`index ${FILES.toLocaleString('en-US')} files of 4 KiB, empty index (spawn to current)`, seconds(cold.ms), `find | xargs sha256sum ${seconds(baseline)}`, `${(cold.ms / baseline).toFixed(2)}x the time`, '<= 1.0x')

  const warm = await daemonUntilCurrent(config)
  await new Promise(resolve => setTimeout(resolve, EARLY_RSS_MS))
  const earlyRss = rssOf(warm.child.pid)
  await new Promise(resolve => setTimeout(resolve, SETTLED_RSS_MS - EARLY_RSS_MS))
  const rss = rssOf(warm.child.pid)
  await stop(warm.child)
  report(`restart over ${FILES.toLocaleString('en-US')} unchanged files (spawn to current)`, seconds(warm.ms), `sha256sum pass ${seconds(baseline)}`, `${(warm.ms / baseline).toFixed(2)}x the time`, '<= 2 s')
  report(`daemon RSS over ${FILES.toLocaleString('en-US')} files, ${EARLY_RSS_MS / 1000} s after current`, `${(earlyRss / 1e6).toFixed(0)} MB`, '-', '-', 'report')
  report(`daemon RSS idle over ${FILES.toLocaleString('en-US')} files, ${SETTLED_RSS_MS / 1000} s after current`, `${(rss / 1e6).toFixed(0)} MB`, '-', '-', '< 250 MB')
}
