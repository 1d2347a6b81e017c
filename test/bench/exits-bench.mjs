// Exits (issue 20): a history exported as a CAR and imported into a fresh service, each beside a
// baseline measured in the same run. BENCH_EXITS_SCALE=target: 100 publishes and 1 GiB of content
// (default: 5 publishes, 64 MiB; BENCH_EXITS_PUBLISHES and BENCH_EXITS_MIB set either).
// The export is measured BENCH_EXITS_ROUNDS times (default 3), each round beside its baselines:
// first the bytes it reads (the service's packs) read cold, the target's baseline.
// BENCH_EXITS_PEER (another build's dist/exits/index.js) and BENCH_EXITS_HTTP=1 add exports to
// compare in the same rounds; BENCH_EXITS_IMPORT=0 skips the import. The import is measured
// BENCH_EXITS_ROUNDS times too, each into fresh services beside `add` (and the peer's import;
// BENCH_EXITS_PEER_SERVICE=1 sends that one to the peer's own service). BENCH_EXITS_EXPORT=0: the
// export once, to make the CAR, and only the imports rounds.
// BENCH_EXITS_PROFILE=<dir>: CPU profiles (node:inspector) of the first round's export and import.
import { spawn, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { createReadStream, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Session } from 'node:inspector/promises'
import { fileURLToPath } from 'node:url'
import { writeStreamFile } from './data.mjs'
import { startLocalService } from '../../dist/local-service/index.js'
import { createServiceClients } from '../../dist/remote/index.js'
import { cidProfile } from '../../dist/content/index.js'
import { newWalletKey, walletAddress } from '../../dist/crypto/index.js'
import { loadConfig } from '../../dist/config/index.js'
import { exportCar, importCar } from '../../dist/exits/index.js'
import { Repository } from '../../dist/sync/index.js'
import { EmbeddedObjectStore } from '../../dist/connect/index.js'

/**
 * A build's export as `(clients, config, init)`: through a repository where the build's
 * `exportCar` takes one (its store reads come with the clients), else with the clients, the
 * config and the in-process store readers, as builds before it did.
 */
function exporterOf (fn, RepositoryOfBuild) {
  if (!/^async function exportCar ?\(repository/.test(fn.toString())) return async (clients, config, init, legacy) => await fn(clients, { config, ...init, ...legacy })
  return async (clients, config, init) => {
    const repository = new RepositoryOfBuild(config, clients)
    try {
      return await fn(repository, init)
    } finally {
      await repository.close()
    }
  }
}

/**
 * Clients of `where` (a service in this process) whose objects are read from its store here, each
 * block checked against its CID, with no HTTP hop: as the CLI's embedded service reads them.
 */
function inProcessClients (where) {
  const url = where.service.url
  const reads = { block: async (cid, into) => await where.service.readStoredBlock(cid, into), run: async (cids, into) => await where.service.readStoredBlocks(cids, into), held: (apiKey, cids) => where.service.heldFiles(apiKey, cids) }
  return createServiceClients({ dealUrl: url, apiUrl: url, pointerUrl: url, uploadUrl: url, gateways: [url] }, where.credentials,
    { objects: overHttp => new EmbeddedObjectStore(overHttp, where.service, where.credentials.apiKey, reads) })
}

/**
 * A build's import as `(clients, config, file)`: through a repository where the build's
 * `importCar` takes one, else with the clients and the config, as builds before it did.
 */
function importerOf (fn, RepositoryOfBuild) {
  if (!/^async function importCar ?\(repository/.test(fn.toString())) return async (clients, config, file) => await fn(clients, { config, file })
  return async (clients, config, file) => {
    const repository = new RepositoryOfBuild(config, clients)
    try {
      return await fn(repository, { file })
    } finally {
      await repository.close()
    }
  }
}

const CLI = fileURLToPath(new URL('../../dist/bin/cidsync.js', import.meta.url))
const MIB = 1024 * 1024
const TARGET = process.env.BENCH_EXITS_SCALE === 'target'
const PUBLISHES = Number(process.env.BENCH_EXITS_PUBLISHES ?? (TARGET ? 100 : 5))
const CONTENT = Number(process.env.BENCH_EXITS_MIB ?? (TARGET ? 1024 : 64)) * MIB
const ROUNDS = Number(process.env.BENCH_EXITS_ROUNDS ?? 3)
/** BENCH_EXITS_EXPORT=0: one export of this build (the CAR the imports read), no peer export, its baselines once. */
const IMPORT_ONLY = process.env.BENCH_EXITS_EXPORT === '0'

const mbps = (bytes, ms) => `${(bytes / MIB / (ms / 1000)).toFixed(0)} MiB/s`

/** A service in this process with an account: its clients, and what a device's config and env need. */
async function account (root, name, makeClients = createServiceClients, startService = startLocalService) {
  const service = await startService({ dir: join(root, name) })
  const url = service.url
  const credentials = {}
  const clients = (makeClients ?? createServiceClients)({ dealUrl: url, apiUrl: url, pointerUrl: url, uploadUrl: url, gateways: [url] }, { apiKey: () => credentials.apiKey, sessionToken: () => credentials.sessionToken })
  const wallet = newWalletKey()
  credentials.apiKey = (await clients.deals.login(wallet)).apiKey
  credentials.sessionToken = service.issueToken(walletAddress(wallet))
  return { service, clients, credentials: { apiKey: () => credentials.apiKey, sessionToken: () => credentials.sessionToken }, env: { ...process.env, CIDSYNC_API_KEY: credentials.apiKey, CIDSYNC_SESSION_TOKEN: credentials.sessionToken } }
}

function device (root, name, where) {
  const url = where.service.url
  mkdirSync(join(root, name, 'files'), { recursive: true })
  const config = join(root, `${name}.toml`)
  writeFileSync(config, `state_dir = "${join(root, name, 'state')}"\nnamespace = "bench-exits"\n[[folders]]\nname = "files"\npath = "${join(root, name, 'files')}"\nstore = true\n` +
    `[status]\nlisten = "127.0.0.1:0"\n[service]\nmode = "remote"\ndeal_url = "${url}"\napi_url = "${url}"\npointer_url = "${url}"\nupload_url = "${url}"\ngateways = ["${url}"]\n[snapshot]\ndeal = false\n`)
  // Spawned, never spawnSync: the service it talks to answers from this process's event loop.
  const run = async (args, input = '') => {
    const child = spawn(process.execPath, [CLI, ...args, '--config', config], { env: where.env, stdio: ['pipe', 'pipe', 'pipe'] })
    const timer = setTimeout(() => child.kill('SIGKILL'), 3_600_000)
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', d => { stdout += d })
    child.stderr.on('data', d => { stderr += d })
    child.stdin.end(input)
    const code = await new Promise(resolve => child.on('close', resolve))
    clearTimeout(timer)
    if (code !== 0) throw new Error(`cidsync ${args.join(' ')}: ${stderr}`)
    return stdout
  }
  return { config, folder: join(root, name, 'files'), run }
}

async function readAll (path, hash = false) {
  let bytes = 0
  for await (const chunk of createReadStream(path, { highWaterMark: MIB })) {
    bytes += chunk.byteLength
    // The least a verified export does: every byte through SHA-256 once.
    if (hash) for (let at = 0; at < chunk.byteLength; at += 256 * 1024) createHash('sha256').update(chunk.subarray(at, at + 256 * 1024)).digest()
  }
  return bytes
}

/**
 * Drops a file's pages from the page cache (GNU dd's `nocache`: posix_fadvise DONTNEED over the
 * whole file), so its next read comes from the disk. Only clean pages go: call it after an fsync.
 * /proc/sys/vm/drop_caches would do every file on a machine others share; this does one.
 */
function evict (path) {
  const done = spawnSync('dd', [`if=${path}`, 'iflag=nocache', 'count=0', 'status=none'])
  if (done.status !== 0) throw new Error(`could not drop ${path} from the page cache: ${done.stderr}`)
}

/** Resident pages of a file, in MiB, when util-linux's fincore is here (to show the eviction took). */
function resident (path) {
  const done = spawnSync('fincore', ['--bytes', '--noheadings', '--output', 'RES', path], { encoding: 'utf8' })
  return done.status === 0 ? `${(Number(done.stdout.trim()) / MIB).toFixed(0)} MiB` : 'unknown (no fincore)'
}

/** Milliseconds `dd` takes with these arguments (status=none). */
function ddMs (args) {
  const t = performance.now()
  const done = spawnSync('dd', [...args, 'status=none'])
  if (done.status !== 0) throw new Error(`dd ${args.join(' ')}: ${done.stderr}`)
  return performance.now() - t
}

/** Runs `fn`, profiled into BENCH_EXITS_PROFILE/<name>.cpuprofile when that is set and `on`. */
async function profiled (name, on, fn) {
  const dir = process.env.BENCH_EXITS_PROFILE
  if (dir === undefined || !on) return await fn()
  const session = new Session()
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.setSamplingInterval', { interval: 500 })
  await session.post('Profiler.start')
  try {
    return await fn()
  } finally {
    const { profile } = await session.post('Profiler.stop')
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, `${name}.cpuprofile`), JSON.stringify(profile))
    session.disconnect()
  }
}

/** CPU milliseconds of this process's main thread (the export's own), from /proc; 10 ms steps. */
function mainThreadCpu () {
  const fields = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10
}

/** CPU milliseconds of each of this process's threads, by name and id from the process's (/proc): BENCH_EXITS_THREADS=1. */
function threadCpu () {
  const by = {}
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')
      const name = `${stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))}:${Number(tid) - process.pid}`
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      by[name] = (by[name] ?? 0) + (Number(fields[11]) + Number(fields[12])) * 10
    } catch {}
  }
  return by
}
const threadDelta = (before, after) => Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)]).filter(([, v]) => v > 0).map(([k, v]) => `${k.trim()} ${v}`).join(', ')

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const spread = (values, format) => `${format(Math.min(...values))}-${format(Math.max(...values))}`

/** Export and import of a history, each beside its plain counterpart. Mirror figures belong in a function of their own. */
export async function benchExits (root, report) {
  const one = await account(root, 'exits-one')
  // The import rounds' services, stopped as each is done (or at the end, on a failure).
  const services = [one]
  try {
    const a = device(root, 'exits-a', one)
    for (let i = 0; i < PUBLISHES; i++) {
      writeStreamFile(join(a.folder, `file-${i}.bin`), Math.floor(CONTENT / PUBLISHES), 20 + (i % 200))
      await a.run(['snapshot'])
    }
    const car = join(root, 'exits.car')
    const config = loadConfig({ configPath: a.config })
    const packs = join(root, 'exits-one', 'packs')
    const packFiles = () => readdirSync(packs).map(name => join(packs, name))
    const copy = join(root, 'exits-copy.car')
    // The export as the CLI runs it on the embedded service: blocks read from its store in this
    // process, each checked against its CID (no HTTP hop). BENCH_EXITS_PEER=<a dist/exits/index.js>
    // runs that build's export too, interleaved (main's, to compare builds in one run), handed the
    // same in-process store reader and run reader (a build older than either option ignores it);
    // BENCH_EXITS_HTTP=1 adds this build's export through the gateway (what a remote service gets).
    const readStored = (cid, into) => one.service.readStoredBlock(cid, into)
    const readStoredRun = (cids, into) => one.service.readStoredBlocks(cids, into)
    const local = inProcessClients(one)
    services.push({ clients: local, service: { stop: async () => {} } })
    const variants = [{ name: 'this build', exportCar: exporterOf(exportCar, Repository), clients: local }]
    if (process.env.BENCH_EXITS_HTTP === '1') variants.push({ name: 'this build through the gateway', exportCar: exporterOf(exportCar, Repository), clients: one.clients })
    if (process.env.BENCH_EXITS_PEER !== undefined && !IMPORT_ONLY) {
      const peer = await import(process.env.BENCH_EXITS_PEER)
      const peerSync = await import(new URL('../sync/index.js', new URL(process.env.BENCH_EXITS_PEER, 'file:///')).href).catch(() => ({}))
      variants.push({ name: `peer ${process.env.BENCH_EXITS_PEER}`, exportCar: exporterOf(peer.exportCar, peerSync.Repository), clients: local, legacy: { readStored, readStoredRun } })
    }
    const exports = variants.map(() => [])
    // CPU of each export: its main thread's, and the whole process's (the store's reads, the
    // writes, any hashing threads), to tell a thread-bound export from a disk-bound one.
    const cpus = variants.map(() => [])
    const runs = { packs: [], packCopy: [], cold: [], direct: [], warm: [], hash: [], copy: [], copyDirect: [] }
    const loads = []
    let exported
    let packBytes = 0
    let t
    let evicted = ''
    // Rounds interleaved: each round runs every variant (their order turned each round) and then
    // the baselines, so the figures of one round saw the same load on the shared machine.
    for (let round = 0; round < (IMPORT_ONLY ? 1 : ROUNDS); round++) {
      loads.push(readFileSync('/proc/loadavg', 'utf8').split(' ')[0])
      const order = variants.map((_, i) => i)
      for (let k = 0; k < round % variants.length; k++) order.push(order.shift())
      for (const i of order) {
        // The export reads its store from the disk, as it would a day after the uploads.
        for (const file of packFiles()) evict(file)
        rmSync(car, { force: true })
        const cpu = { main: mainThreadCpu(), all: process.cpuUsage(), threads: threadCpu() }
        t = performance.now()
        const done = await profiled(`export-${i}`, round === 0, () => variants[i].exportCar(variants[i].clients, config, { file: car, content: true }, variants[i].legacy))
        exports[i].push(performance.now() - t)
        const all = process.cpuUsage(cpu.all)
        cpus[i].push(`${mainThreadCpu() - cpu.main}/${Math.round((all.user + all.system) / 1000)}`)
        if (process.env.BENCH_EXITS_THREADS === '1') console.log(`${variants[i].name}: CPU ms by thread: ${threadDelta(cpu.threads, threadCpu())}`)
        if (i === 0) exported = done
        else if (done.carBytes !== exported?.carBytes && exported !== undefined) console.log(`note: ${variants[i].name} wrote ${done.carBytes} bytes, this build ${exported.carBytes}`)
      }
      // The baseline the target names: the bytes the export reads (the service's packs) read
      // from the disk, their pages dropped first, by dd in 4 MiB reads: a read loop that costs next
      // to no CPU, so on a loaded machine it still measures the disk.
      for (const file of packFiles()) evict(file)
      t = performance.now()
      packBytes = 0
      for (const file of packFiles()) {
        packBytes += statSync(file).size
        ddMs([`if=${file}`, 'of=/dev/null', 'bs=4M'])
      }
      runs.packs.push(performance.now() - t)
      // What reading and writing these bytes costs on this disk: the same packs read from it and
      // written to a new file, durably, one after the other (dd: no CPU spent on the bytes, O_DIRECT
      // writes as CarFile's). An export overlaps the two, so it may run faster than this.
      for (const file of packFiles()) evict(file)
      t = performance.now()
      for (const file of packFiles()) {
        rmSync(copy, { force: true })
        ddMs([`if=${file}`, `of=${copy}`, 'bs=4M', 'oflag=direct', 'conv=fsync'])
      }
      runs.packCopy.push(performance.now() - t)
      rmSync(copy, { force: true })
      // The CAR's bytes read the same way (what this bench compared with before; a file written
      // in one go, so laid out on the disk at least as well as packs appended over 100 uploads).
      evict(car)
      if (round === 0) evicted = resident(car)
      runs.cold.push(ddMs([`if=${car}`, 'of=/dev/null', 'bs=4M']))
      // The disk without the page cache at all: O_DIRECT in 4 MiB reads.
      runs.direct.push(ddMs([`if=${car}`, 'of=/dev/null', 'bs=4M', 'iflag=direct']))
      // Warm: the bytes already in memory (what `cat` of a file just written measures; not a disk).
      await readAll(car)
      t = performance.now()
      await readAll(car)
      runs.warm.push(performance.now() - t)
      t = performance.now()
      await readAll(car, true)
      runs.hash.push(performance.now() - t)
      // The least any export writes: the same bytes to a new file, fsynced (the disk's write speed).
      rmSync(copy, { force: true })
      runs.copy.push(ddMs([`if=${car}`, `of=${copy}`, 'bs=4M', 'conv=fsync']))
      rmSync(copy, { force: true })
      // The same with O_DIRECT writes, as CarFile writes where the filesystem takes them.
      runs.copyDirect.push(ddMs([`if=${car}`, `of=${copy}`, 'bs=4M', 'oflag=direct', 'conv=fsync']))
      rmSync(copy, { force: true })
    }
    const bytes = exported.carBytes
    const rate = (ms, of = bytes) => of / MIB / (ms / 1000)
    const rates = Object.fromEntries(Object.entries(runs).map(([k, v]) => [k, v.map(ms => rate(ms, k === 'packs' || k === 'packCopy' ? packBytes : bytes))]))
    const show = (values) => `${median(values).toFixed(0)} MiB/s (${spread(values, v => v.toFixed(0))})`
    const showRatio = (values) => `${median(values).toFixed(2)}x (${spread(values, v => v.toFixed(2))})`
    console.log(`load average (1 min) at each round's start: ${loads.join(', ')}`)
    variants.forEach((variant, v) => {
      const own = exports[v].map(ms => rate(ms))
      const ratios = (base) => own.map((r, i) => r / rates[base][i])
      console.log(`${variant.name}: export rounds ${own.map(r => r.toFixed(0)).join(', ')} MiB/s (wall ${exports[v].map(ms => ms.toFixed(0)).join(', ')} ms; CPU ms main thread/process ${cpus[v].join(', ')}); packs cold ${rates.packs.map(r => r.toFixed(0)).join(', ')} MiB/s`)
      const exportName = `${variant.name}: export ${exported.publishes} publishes + ${(exported.bytes / MIB).toFixed(0)} MiB of objects to a CAR of ${(bytes / MIB).toFixed(0)} MiB, store read from disk (blocks read, each checked, written, fsynced), median of ${ROUNDS}`
      report(exportName, show(own), `reading the bytes it reads from disk: the service's ${packFiles().length} pack files (${(packBytes / MIB).toFixed(0)} MiB, dd bs=4M, their pages dropped first) ${show(rates.packs)}`, `${showRatio(ratios('packs'))} cold read`, '>= 0.5x')
      report('  the same exports beside copying the packs from disk to a new file, fsynced (dd bs=4M oflag=direct conv=fsync, their pages dropped first: reading and writing the bytes with no CPU on them)', show(own), `packs copied cold ${show(rates.packCopy)}`, `${showRatio(ratios('packCopy'))} packs copy`, 'context')
      report('  the same exports beside reading the CAR from disk (dd bs=4M, its pages dropped first: ' + evicted + ' left resident)', show(own), `CAR cold read ${show(rates.cold)}`, `${showRatio(ratios('cold'))} CAR cold read`, 'context')
      report('  the same exports beside reading the CAR with O_DIRECT (dd bs=4M iflag=direct)', show(own), `O_DIRECT read ${show(rates.direct)}`, `${showRatio(ratios('direct'))} direct read`, 'context')
      report('  the same exports beside reading the CAR from the page cache in this process (warm: not a disk read)', show(own), `warm read ${show(rates.warm)}`, `${showRatio(ratios('warm'))} warm read`, 'context')
      report('  the same exports beside reading the CAR (warm) and hashing each 256 KiB once (the CPU floor of a verified export)', show(own), `read + SHA-256 ${show(rates.hash)}`, `${showRatio(ratios('hash'))} read+hash`, 'context')
      report('  the same exports beside copying the CAR to a new file, fsynced (dd bs=4M conv=fsync: the disk-write floor of any export)', show(own), `copy + fsync ${show(rates.copy)}`, `${showRatio(ratios('copy'))} copy`, 'context')
      report('  the same exports beside that copy written with O_DIRECT, fsynced (dd bs=4M oflag=direct conv=fsync: how CarFile writes)', show(own), `O_DIRECT copy + fsync ${show(rates.copyDirect)}`, `${showRatio(ratios('copyDirect'))} direct copy`, 'context')
    })
    if (process.env.BENCH_EXITS_IMPORT === '0') return

    // Each round: every import (this build's, the peer's, with its own clients) into a fresh
    // service and the same bytes through `add` into another, order turned each round.
    // BENCH_EXITS_PEER_SERVICE=1: the peer's import goes to the peer build's own local service (to
    // compare the service's dag/import route between builds), not this build's.
    const importers = [{ name: 'this build', importCar: importerOf(importCar, Repository), createServiceClients: undefined, startLocalService: undefined }]
    if (process.env.BENCH_EXITS_PEER !== undefined) {
      const remote = await import(process.env.BENCH_EXITS_PEER.replace(/exits\/index\.js$/, 'remote/index.js'))
      const peerSync = await import(process.env.BENCH_EXITS_PEER.replace(/exits\/index\.js$/, 'sync/index.js'))
      const peerService = process.env.BENCH_EXITS_PEER_SERVICE === '1' ? (await import(process.env.BENCH_EXITS_PEER.replace(/exits\/index\.js$/, 'local-service/index.js'))).startLocalService : undefined
      importers.push({ name: `peer ${process.env.BENCH_EXITS_PEER}${peerService === undefined ? '' : ' (its own service)'}`, importCar: importerOf((await import(process.env.BENCH_EXITS_PEER)).importCar, peerSync.Repository), createServiceClients: remote.createServiceClients, startLocalService: peerService })
    }
    const keys = await a.run(['key', 'export'])
    const imports = importers.map(() => [])
    const adds = []
    const importLoads = []
    let imported
    for (let round = 0; round < ROUNDS; round++) {
      importLoads.push(readFileSync('/proc/loadavg', 'utf8').split(' ')[0])
      const steps = [...importers.map((_, i) => i), 'add']
      for (let k = 0; k < round % steps.length; k++) steps.push(steps.shift())
      for (const step of steps) {
        const where = await account(root, `exits-in-${round}-${step}`, step === 'add' ? undefined : importers[step].createServiceClients, step === 'add' ? undefined : importers[step].startLocalService)
        services.push(where)
        if (step === 'add') {
          t = performance.now()
          await where.clients.objects.put(car, cidProfile('kubo-cidv1'))
          adds.push(performance.now() - t)
        } else {
          const c = device(root, `exits-c-${round}-${step}`, where)
          await c.run(['key', 'import'], keys)
          t = performance.now()
          const done = await profiled(`import-${step}`, round === 0, () => importers[step].importCar(where.clients, loadConfig({ configPath: c.config }), car))
          imports[step].push(performance.now() - t)
          if (step === 0) imported = done
        }
        await where.clients.close()
        await where.service.stop()
        services.pop()
      }
    }
    console.log(`load average (1 min) at each import round's start: ${importLoads.join(', ')}`)
    importers.forEach((importer, v) => {
      const own = imports[v].map(ms => rate(ms))
      const ratios = own.map((r, i) => r / rate(adds[i]))
      console.log(`${importer.name}: import rounds ${own.map(r => r.toFixed(0)).join(', ')} MiB/s; add ${adds.map(ms => rate(ms).toFixed(0)).join(', ')} MiB/s`)
      report(`${importer.name}: import that CAR into a fresh service (checked, sent, chain decrypted and checked, pointer moved): ${imported.objects} objects, median of ${ROUNDS}`, show(own), `the same bytes as a plain file through add ${show(adds.map(ms => rate(ms)))}`, `${showRatio(ratios)} add`, '>= 0.5x')
    })
  } finally {
    for (const where of services) {
      await where.clients.close()
      await where.service.stop()
    }
  }
}
