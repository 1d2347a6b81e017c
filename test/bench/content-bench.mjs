// npm run bench -- content: content custody (issue 16) through the CLI and its embedded service,
// each figure beside restic (Debian's) run on the same tree in the same run; without restic the
// ratios are skipped and the bench says so (`apt-get install restic`).
// The tree: BENCH_CONTENT_SCALE × (100 files of 1 to 50 MiB + 10,000 files of 4 to 64 KiB). The
// target is the full tree (BENCH_CONTENT_SCALE=1: 3.1 GB, though issue 16 calls it 1 GiB); the default 0.05 (160 MB)
// runs in a few minutes on two busy cores. BENCH_CONTENT_SMALL (default 10,000) files of 4 KiB
// make the request-count case.
import { spawn, spawnSync } from 'node:child_process'
import { cpSync, mkdirSync, openSync, readdirSync, statSync, writeFileSync, writeSync, closeSync, readFileSync } from 'node:fs'
import { createHash, randomBytes } from 'node:crypto'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { rssOf, writeStreamFile } from './data.mjs'
import { alternate, cacheLevel } from './restore-rounds.mjs'

const CLI = fileURLToPath(new URL('../../dist/bin/cidsync.js', import.meta.url))
const SCALE = Number(process.env.BENCH_CONTENT_SCALE ?? 0.05)
const SMALL = Number(process.env.BENCH_CONTENT_SMALL ?? 10_000)
/** Alternated restore rounds of each tool (BENCH_CONTENT_ROUNDS). */
const ROUNDS = Number(process.env.BENCH_CONTENT_ROUNDS ?? 3)
const MIB = 1024 * 1024
/** The file `get` brings back alone, in MiB (BENCH_CONTENT_GET_MIB): the target names 1 GiB. */
const GET_MIB = Number(process.env.BENCH_CONTENT_GET_MIB ?? 1024)
const RESTIC_ENV = { ...process.env, RESTIC_PASSWORD: 'bench' }

let seed = 4242
const next = (n) => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed % n }

/** The mixed tree; answers its byte count and the largest file. */
function makeTree (dir) {
  let bytes = 0
  let largest = { path: '', size: 0 }
  mkdirSync(join(dir, 'large'), { recursive: true })
  for (let i = 0; i < Math.max(1, Math.round(100 * SCALE)); i++) {
    const size = (1 + next(50)) * MIB
    const path = join(dir, 'large', `file-${i}.bin`)
    writeStreamFile(path, size, 20 + i)
    bytes += size
    if (size > largest.size) largest = { path, size }
  }
  for (let i = 0; i < Math.max(1, Math.round(10_000 * SCALE)); i++) {
    const sub = join(dir, 'small', String(i % 50))
    if (i < 50) mkdirSync(sub, { recursive: true })
    const size = 4096 + next(60 * 1024)
    writeFileSync(join(sub, `doc-${i}.txt`), randomBytes(size))
    bytes += size
  }
  return { bytes, largest }
}

/** Every file of `from` at the same path under `to`, of the same size but other bytes. */
function changedCopy (from, to) {
  mkdirSync(to, { recursive: true })
  for (const name of readdirSync(from, { recursive: true })) {
    const stats = statSync(join(from, name))
    if (stats.isDirectory()) mkdirSync(join(to, name), { recursive: true })
    else writeFileSync(join(to, name), randomBytes(stats.size))
  }
}

function du (dir) {
  let total = 0
  for (const name of readdirSync(dir, { recursive: true })) {
    const stats = statSync(join(dir, name), { throwIfNoEntry: false })
    if (stats?.isFile() === true) total += stats.size
  }
  return total
}

/** Runs a command, sampling its RSS; throws on a failure exit. */
async function timed (command, args, options = {}) {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', d => { stdout += d })
  child.stderr.on('data', d => { stderr += d })
  let peak = 0
  const timer = setInterval(() => { try { peak = Math.max(peak, rssOf(child.pid)) } catch {} }, 100)
  const started = performance.now()
  const code = await new Promise(resolve => child.once('exit', resolve))
  clearInterval(timer)
  if (code !== 0) throw new Error(`${command} ${args.join(' ')} exited ${code}: ${stderr.slice(-2000)}`)
  return { ms: performance.now() - started, peak, stdout, stderr }
}

const cidsync = async (args) => await timed(process.execPath, [CLI, ...args])

/** Uploads the service recorded so far: requests and bytes (every `add`, content and index alike). */
function uploads (serviceDir) {
  const db = new Database(join(serviceDir, 'service.sqlite'), { readonly: true })
  try {
    return db.prepare('SELECT count(*) AS requests, coalesce(sum(size), 0) AS bytes FROM files').get()
  } finally {
    db.close()
  }
}

function config (root, name, folder, service, namespace) {
  const path = join(root, `${name}.toml`)
  writeFileSync(path, `state_dir = "${name}-state"\nnamespace = "${namespace}"\n[[folders]]\nname = "tree"\npath = "${folder}"\nstore = true\n` +
    `[service]\ndir = "${service}"\n[snapshot]\ndeal = false\n[status]\nlisten = "127.0.0.1:0"\n`)
  return path
}

function sameTrees (a, b) {
  for (const name of readdirSync(a, { recursive: true })) {
    const stats = statSync(join(a, name))
    if (!stats.isFile()) continue
    const hash = (p) => createHash('sha256').update(readFileSync(p)).digest('hex')
    if (hash(join(a, name)) !== hash(join(b, name))) return `${relative(a, join(a, name))} differs`
  }
  return undefined
}

const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`
const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`
const ratio = (a, b) => b === undefined ? 'restic missing' : `${(a / b).toFixed(2)}x`

/**
 * One small file rewritten, then each tool's next backup of the whole tree, in turn: what a user's
 * `snapshot` after an edit costs, most of it the tool's own start. Median of three.
 */
async function smallChange (tree, config, repo, report) {
  const small = join(tree, 'small', '0', 'doc-0.txt')
  const ours = []
  const theirs = []
  for (let r = 0; r < 3; r++) {
    writeFileSync(small, randomBytes(8192))
    const runs = [async () => ours.push((await cidsync(['snapshot', '--config', config])).ms), async () => theirs.push((await timed('restic', ['backup', '--repo', repo, tree], { env: RESTIC_ENV })).ms)]
    if (r % 2 === 1) runs.reverse()
    for (const run of runs) await run()
  }
  const median = (values) => [...values].sort((x, y) => x - y)[1]
  const files = readdirSync(tree, { recursive: true }).length
  report(`one small file changed, then the next backup of the ${files.toLocaleString('en-US')} entries, median of 3`, seconds(median(ours)), `restic backup ${seconds(median(theirs))}`, ratio(median(ours), median(theirs)), 'report')
}

export async function benchContent (root, report) {
  const hasRestic = spawnSync('restic', ['version']).status === 0
  if (!hasRestic) console.log('restic is not installed (apt-get install restic): the ratios to it are skipped')
  const tree = join(root, 'content-tree')
  const { bytes, largest } = makeTree(tree)
  console.log(`content tree: ${mb(bytes)} (scale ${SCALE})`)
  const service = join(root, 'content-service')
  const a = config(root, 'a', tree, service, 'bench-content')

  const before = uploads.bind(null, service)
  const repo = join(root, 'restic-repo')
  const level = () => cacheLevel(hasRestic ? [tree, service, repo] : [tree, service])
  let cache = level()
  const first = await cidsync(['snapshot', '--config', a])
  const afterFirst = before()
  // Blocks as this version stores them (packs/), or as versions before packs did (blocks/).
  const stored = ['packs', 'blocks'].reduce((sum, d) => sum + (statSync(join(service, d), { throwIfNoEntry: false }) === undefined ? 0 : du(join(service, d))), 0)
  let restic
  const firstBackups = { ours: [first.ms], theirs: [] }
  if (hasRestic) {
    await timed('restic', ['init', '--repo', repo], { env: RESTIC_ENV })
    const empty = du(repo)
    level()
    const backup = await timed('restic', ['backup', '--repo', repo, tree], { env: RESTIC_ENV, cwd: root })
    restic = { grew: du(repo) - empty }
    firstBackups.theirs.push(backup.ms)
    // A second round in the other order, each into a new repository and service.
    const again = join(root, 'restic-again')
    await timed('restic', ['init', '--repo', again], { env: RESTIC_ENV })
    cache = level()
    firstBackups.theirs.push((await timed('restic', ['backup', '--repo', again, tree], { env: RESTIC_ENV, cwd: root })).ms)
    const e = config(root, 'e', tree, join(root, 'service-again'), 'bench-again')
    level()
    firstBackups.ours.push((await cidsync(['snapshot', '--config', e])).ms)
    console.log(`first backups: page cache ${cache} before each; cidsync/restic ${seconds(firstBackups.ours[0])}/${seconds(firstBackups.theirs[0])} (cidsync first), ${seconds(firstBackups.ours[1])}/${seconds(firstBackups.theirs[1])} (restic first)`)
    restic.backup = (firstBackups.theirs[0] + firstBackups.theirs[1]) / 2
  }
  first.ms = (firstBackups.ours[0] + (firstBackups.ours[1] ?? firstBackups.ours[0])) / 2
  report(`first backup of ${mb(bytes)} (cidsync snapshot, embedded service), mean of both orders`, seconds(first.ms), restic === undefined ? '-' : `restic backup ${seconds(restic.backup)}`, ratio(first.ms, restic?.backup), '<= 1.0x')
  report('  stored bytes (the service\'s blocks)', mb(stored), restic === undefined ? '-' : `restic repo grew ${mb(restic.grew)}`, ratio(stored, restic?.grew), '<= 1.1x')
  report('  peak RSS of cidsync while storing', mb(first.peak), '-', '-', '< 300 MB (10 GiB tree)')
  report('  uploads of the first backup', `${afterFirst.requests} requests`, '-', '-', 'report')
  if (restic !== undefined) await smallChange(tree, a, repo, report)

  // A second device with the key restores the index and brings every file back.
  const b = config(root, 'b', join(root, 'b-tree'), service, 'bench-content')
  mkdirSync(join(root, 'b-tree'))
  const key = await cidsync(['key', 'export', '--config', a])
  await cidsync(['key', 'import', key.stdout.trim(), '--config', b])
  await cidsync(['restore', '--config', b])
  // Restored by both tools, alternated: every file, the large ones alone, the small ones alone.
  const back = join(root, 'cidsync-back')
  const restored = await cidsync(['restore', '--files', '--to', back, '--config', b])
  const differs = sameTrees(tree, join(back, 'tree'))
  if (differs !== undefined) throw new Error(`restore --files: ${differs}`)
  if (restic !== undefined) {
    let n = 0
    const fresh = (name) => join(root, 'rounds', `${name}-${n++}`)
    const cases = [
      { name: 'all', label: 'restore every file (restore --files, verified)', ours: [], include: [] },
      { name: 'large', label: `  large files alone (${Math.max(1, Math.round(100 * SCALE))}, 1-50 MiB)`, ours: ['tree/large'], include: ['--include', join(tree, 'large')] },
      { name: 'small', label: `  small files alone (${Math.max(1, Math.round(10_000 * SCALE))}, 4-64 KiB)`, ours: ['tree/small'], include: ['--include', join(tree, 'small')] }
    ]
    const results = await alternate({
      cases,
      rounds: ROUNDS,
      level,
      fresh,
      ours: async (c, to) => await cidsync(['restore', '--files', ...c.ours, '--to', to, '--config', b]),
      theirs: async (c, to) => await timed('restic', ['restore', 'latest', '--repo', repo, '--target', to, ...c.include], { env: RESTIC_ENV })
    })
    console.log(`restore rounds: page cache ${cache} before each run; cidsync first in rounds ${results[0].order.map((o, i) => o === 'ours' ? i + 1 : undefined).filter(Boolean).join(', ')}`)
    for (const r of results) {
      const each = r.ours.map((ms, i) => `${seconds(ms)}/${seconds(r.theirs[i])} (${r.order[i] === 'ours' ? 'cidsync first' : 'restic first'})`).join(', ')
      console.log(`  ${r.case.name}: cidsync/restic by round ${each}`)
      report(`${r.case.label}, median of ${ROUNDS}`, seconds(r.median.ours), `restic restore ${seconds(r.median.theirs)}`, ratio(r.median.ours, r.median.theirs), '<= 1.0x')
    }
    // Over a copy whose every small file holds other bytes of its size: each is compared, then
    // replaced. Debian's restic (0.14) leaves such files as they are: the baseline is cidsync's
    // own restore of them into an empty directory.
    const over = []
    for (let r = 0; r < ROUNDS; r++) {
      const to = fresh('changed')
      changedCopy(join(tree, 'small'), join(to, 'tree', 'small'))
      level()
      over.push((await cidsync(['restore', '--files', 'tree/small', '--overwrite', '--to', to, '--config', b])).ms)
      const wrong = sameTrees(join(tree, 'small'), join(to, 'tree', 'small'))
      if (wrong !== undefined) throw new Error(`restore --files --overwrite: ${wrong}`)
    }
    const into = results.find(r => r.case.name === 'small').median.ours
    const overMedian = [...over].sort((x, y) => x - y)[Math.floor(over.length / 2)]
    report(`  small files over a changed copy of them (--overwrite), median of ${ROUNDS}`, seconds(overMedian), `into an empty directory ${seconds(into)}`, ratio(overMedian, into), 'report')
    // Sampled every 100 ms: a shorter peak may be missed.
    const peaks = { ours: Math.max(...results.map(r => r.peak.ours)), theirs: Math.max(...results.map(r => r.peak.theirs)) }
    report('  peak RSS while restoring (the highest of every run)', mb(peaks.ours), `restic restore ${mb(peaks.theirs)}`, ratio(peaks.ours, peaks.theirs), '< 300 MB')
  } else {
    report('restore every file (restore --files, verified)', seconds(restored.ms), '-', ratio(restored.ms, undefined), '<= 1.0x')
  }

  await getOne(root, level, report)

  // A third device holding the same files: nothing of their content goes up again.
  const copy = join(root, 'c-tree')
  cpSync(tree, copy, { recursive: true })
  const c = config(root, 'c', copy, service, 'bench-content')
  await cidsync(['key', 'import', key.stdout.trim(), '--config', c])
  await cidsync(['restore', '--config', c])
  const beforeC = before()
  const third = await cidsync(['snapshot', '--config', c])
  const afterC = before()
  const storedByC = /stored (\d+) files?/.exec(third.stderr)?.[1] ?? '0'
  report('second device with the same files: bytes uploaded (index included)', mb(afterC.bytes - beforeC.bytes), `${storedByC} files stored anew`, '-', '0 content bytes')

  // One large file changed in its middle.
  const fd = openSync(largest.path, 'r+')
  writeSync(fd, randomBytes(4096), 0, 4096, Math.floor(largest.size / 2))
  closeSync(fd)
  const beforeChange = before()
  await cidsync(['snapshot', '--config', a])
  const afterChange = before()
  report(`one changed ${(largest.size / MIB).toFixed(0)} MiB file: bytes uploaded (index included)`, mb(afterChange.bytes - beforeChange.bytes), `the file ${mb(largest.size)}`, `${((afterChange.bytes - beforeChange.bytes) / largest.size).toFixed(2)}x the file`, '<= the file + the index')

  // Many small files: few requests.
  const smallTree = join(root, 'small-tree')
  for (let i = 0; i < SMALL; i++) {
    const sub = join(smallTree, String(i % 100))
    if (i < 100) mkdirSync(sub, { recursive: true })
    writeFileSync(join(sub, `s-${i}.txt`), randomBytes(4096))
  }
  const smallService = join(root, 'small-service')
  const d = config(root, 'd', smallTree, smallService, 'bench-small')
  const small = await cidsync(['snapshot', '--config', d])
  const smallUploads = uploads(smallService)
  report(`${SMALL.toLocaleString('en-US')} files of 4 KiB: upload requests (index included)`, String(smallUploads.requests), `in ${seconds(small.ms)}`, '-', '<= 100')
}

/**
 * One large file alone, as `get` brings it, from a cold page cache: its rate, against `cp` of the
 * same file and a sync of the copy (the disk's rate, with the fsync cidsync makes).
 */
async function getOne (root, level, report) {
  const folder = join(root, 'get-tree')
  mkdirSync(folder)
  const size = GET_MIB * MIB
  writeStreamFile(join(folder, 'one.bin'), size, 99)
  const g = config(root, 'g', folder, join(root, 'get-service'), 'bench-get')
  await cidsync(['snapshot', '--config', g])
  const rates = { ours: [], disk: [] }
  for (let round = 0; round < 2; round++) {
    const to = join(root, `get-${round}`)
    level()
    rates.ours.push(size / 1e6 / ((await cidsync(['get', 'tree/one.bin', '--to', to, '--config', g])).ms / 1000))
    if (sameTrees(folder, join(to, 'tree')) !== undefined) throw new Error('get: the file came back with other bytes')
    level()
    const copy = join(root, `get-cp-${round}`)
    rates.disk.push(size / 1e6 / ((await timed('sh', ['-c', 'cp "$1" "$2" && sync "$2"', 'sh', join(folder, 'one.bin'), copy])).ms / 1000))
  }
  const best = (values) => Math.max(...values)
  report(`get of one ${GET_MIB} MiB file, cold cache, best of 2`, `${best(rates.ours).toFixed(0)} MB/s`, `cp and sync ${best(rates.disk).toFixed(0)} MB/s`, `${(best(rates.ours) / best(rates.disk)).toFixed(2)}x the disk`, '>= 300 MB/s (1 GiB)')
}
