// Exits (issue 20): a history exported as a CAR and imported into a fresh service, each beside a
// baseline measured in the same run. BENCH_EXITS_SCALE=target: 100 publishes and 1 GiB of content
// (default: 5 publishes, 64 MiB; BENCH_EXITS_PUBLISHES and BENCH_EXITS_MIB set either).
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { createReadStream, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { writeStreamFile } from './data.mjs'
import { startLocalService } from '../../dist/local-service/index.js'
import { createServiceClients } from '../../dist/remote/index.js'
import { cidProfile } from '../../dist/content/index.js'
import { newWalletKey, walletAddress } from '../../dist/crypto/index.js'
import { loadConfig } from '../../dist/config/index.js'
import { exportCar, importCar } from '../../dist/exits/index.js'

const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url))
const MIB = 1024 * 1024
const TARGET = process.env.BENCH_EXITS_SCALE === 'target'
const PUBLISHES = Number(process.env.BENCH_EXITS_PUBLISHES ?? (TARGET ? 100 : 5))
const CONTENT = Number(process.env.BENCH_EXITS_MIB ?? (TARGET ? 1024 : 64)) * MIB

const mbps = (bytes, ms) => `${(bytes / MIB / (ms / 1000)).toFixed(0)} MiB/s`

/** A service in this process with an account: its clients, and what a device's config and env need. */
async function account (root, name) {
  const service = await startLocalService({ dir: join(root, name) })
  const url = service.url
  const credentials = {}
  const clients = createServiceClients({ dealUrl: url, apiUrl: url, pointerUrl: url, uploadUrl: url, gateways: [url] }, { apiKey: () => credentials.apiKey, sessionToken: () => credentials.sessionToken })
  const wallet = newWalletKey()
  credentials.apiKey = (await clients.deals.login(wallet)).apiKey
  credentials.sessionToken = service.issueToken(walletAddress(wallet))
  return { service, clients, env: { ...process.env, CIDSYNC_API_KEY: credentials.apiKey, CIDSYNC_SESSION_TOKEN: credentials.sessionToken } }
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

/** Export and import of a history, each beside its plain counterpart. Mirror figures belong in a function of their own. */
export async function benchExits (root, report) {
  const one = await account(root, 'exits-one')
  const two = await account(root, 'exits-two')
  const plain = await account(root, 'exits-plain')
  try {
    const a = device(root, 'exits-a', one)
    for (let i = 0; i < PUBLISHES; i++) {
      writeStreamFile(join(a.folder, `file-${i}.bin`), Math.floor(CONTENT / PUBLISHES), 20 + (i % 200))
      await a.run(['snapshot'])
    }
    const car = join(root, 'exits.car')
    const config = loadConfig({ configPath: a.config })
    let t = performance.now()
    const exported = await exportCar(one.clients, { config, file: car, content: true })
    const exportMs = performance.now() - t
    // Best of two: the machine is shared.
    let readMs = Infinity
    for (let round = 0; round < 2; round++) {
      t = performance.now()
      await readAll(car)
      readMs = Math.min(readMs, performance.now() - t)
    }
    t = performance.now()
    await readAll(car, true)
    const hashMs = performance.now() - t
    report(`export ${exported.publishes} publishes + ${(exported.bytes / MIB).toFixed(0)} MiB of objects to a CAR (fetched, blocks rebuilt, written, fsynced)`, mbps(exported.carBytes, exportMs), `reading the CAR's bytes from disk ${mbps(exported.carBytes, readMs)}`, `${(readMs / exportMs).toFixed(2)}x read`, '>= 0.5x')
    report('  the same export beside reading the CAR\'s bytes and hashing each 256 KiB once (the floor of any verified export)', mbps(exported.carBytes, exportMs), `read + SHA-256 ${mbps(exported.carBytes, hashMs)}`, `${(hashMs / exportMs).toFixed(2)}x read+hash`, 'context')

    const c = device(root, 'exits-c', two)
    await c.run(['key', 'import'], await a.run(['key', 'export']))
    t = performance.now()
    const imported = await importCar(two.clients, { config: loadConfig({ configPath: c.config }), file: car })
    const importMs = performance.now() - t
    t = performance.now()
    await plain.clients.upload.add(car, cidProfile('kubo-cidv1'))
    const addMs = performance.now() - t
    report(`import that CAR into a fresh service (checked, sent, chain decrypted and checked, pointer moved): ${imported.objects} objects`, mbps(exported.carBytes, importMs), `the same bytes as a plain file through add ${mbps(exported.carBytes, addMs)}`, `${(addMs / importMs).toFixed(2)}x add`, '>= 0.5x')
  } finally {
    for (const where of [one, two, plain]) {
      await where.clients.close()
      await where.service.stop()
    }
  }
}
