// Mirrors (issue 20): the primary's publish time with one mirror against none, and a mirror's
// catch-up after it was down for N publishes, every one of them checked on it afterwards.
import { spawn, execFileSync } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createServiceClients } from '../../dist/remote/index.js'
import { cidProfile } from '../../dist/content/index.js'
import { formatWalletKey, newWalletKey, walletAddress } from '../../dist/crypto/index.js'

const CLI = fileURLToPath(new URL('../../dist/bin/cidsync.js', import.meta.url))
const PUBLISHES = Number(process.env.BENCH_MIRROR_PUBLISHES ?? 20)
const DOWN = Number(process.env.BENCH_MIRROR_DOWN ?? 24)
const FILE_BYTES = 64 * 1024

async function startService (dir, listen = '127.0.0.1:0') {
  mkdirSync(dir, { recursive: true })
  const child = spawn(process.execPath, [CLI, 'local-service', '--dir', dir, '--listen', listen], { stdio: ['ignore', 'pipe', 'ignore'] })
  const url = await new Promise((resolve, reject) => {
    child.stdout.once('data', d => resolve(d.toString().trim()))
    child.once('exit', code => reject(new Error(`local-service exited ${code}`)))
  })
  return { child, url, dir, stop: async () => { child.removeAllListeners('exit'); const done = new Promise(r => child.once('exit', r)); child.kill('SIGTERM'); await done } }
}

const cli = (args, env = process.env) => execFileSync(process.execPath, [CLI, ...args], { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })

/** A device in remote mode on `primary`, with `mirror` as its mirror when given; its daemon running. */
async function device (root, name, primary, mirror) {
  const dir = join(root, name)
  mkdirSync(join(dir, 'kept'), { recursive: true })
  const key = newWalletKey()
  const u = primary.url
  const config = join(dir, 'cidsync.toml')
  writeFileSync(config, `state_dir = "state"\nnamespace = "${name}"\n[[folders]]\nname = "kept"\npath = "kept"\nstore = true\n` +
    `[service]\nmode = "remote"\ndeal_url = "${u}"\napi_url = "${u}"\npointer_url = "${u}"\nupload_url = "${u}"\ngateways = ["${u}"]\n[status]\nlisten = "127.0.0.1:0"\n` +
    '[snapshot]\nschedule = "0 0 1 1 *"\nquiet_seconds = 86400\nmin_interval_seconds = 0\ndeal = false\n[reconcile]\nschedule = "0 0 1 1 *"\n[verify]\nschedule = ""\n' +
    (mirror === undefined ? '' : `[[mirrors]]\nname = "nas"\nurl = "${mirror.url}"\n`))
  cli(['login', '--config', config], { ...process.env, CIDSYNC_WALLET_KEY: formatWalletKey(key) })
  writeFileSync(join(dir, 'session-token'), cli(['local-service', 'token', '--user', walletAddress(key), '--dir', primary.dir]).trim() + '\n', { mode: 0o600 })
  if (mirror !== undefined) {
    writeFileSync(join(dir, 'mirror-wallet'), formatWalletKey(key), { mode: 0o600 })
    writeFileSync(join(dir, 'mirror-token'), cli(['local-service', 'token', '--user', walletAddress(key), '--dir', mirror.dir]).trim(), { mode: 0o600 })
    cli(['login', '--config', config, '--mirror', 'nas', '--wallet-key-file', join(dir, 'mirror-wallet'), '--session-token-file', join(dir, 'mirror-token'), '--same-wallet'])
  }
  const daemon = spawn(process.execPath, [CLI, 'daemon', '--config', config], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, CIDSYNC_MIRROR_RETRY_MAX_MS: '1000' } })
  let log = ''
  daemon.stderr.on('data', d => { log += d.toString() })
  const d = { dir, config, daemon, state: join(dir, 'state'), files: 0 }
  await until(() => log.includes('"service ready"'), 120_000, `${name}'s daemon ready`)
  d.status = async () => {
    const info = JSON.parse(readFileSync(join(d.state, 'daemon.json'), 'utf8'))
    return await (await fetch(`http://127.0.0.1:${info.status.split(':').pop()}/status`)).json()
  }
  d.publish = async () => {
    // A new stored file, indexed before the publish is timed: the publish stores it and snapshots.
    writeFileSync(join(dir, 'kept', `f${d.files}.bin`), Buffer.alloc(FILE_BYTES, d.files % 251))
    d.files++
    await until(async () => (await d.status()).index.files === d.files, 60_000, 'the file indexed')
    const info = JSON.parse(readFileSync(join(d.state, 'daemon.json'), 'utf8'))
    const token = readFileSync(join(d.state, 'status.token'), 'utf8').trim()
    const started = performance.now()
    const answer = await fetch(`http://127.0.0.1:${info.status.split(':').pop()}/snapshot`, { method: 'POST', headers: { authorization: `Bearer ${token}` } })
    const body = await answer.json()
    if (answer.status !== 200) throw new Error(`publish failed: ${JSON.stringify(body)}`)
    return { ms: performance.now() - started, cid: body.cid }
  }
  d.stop = async () => { const done = new Promise(r => daemon.once('exit', r)); daemon.kill('SIGTERM'); await done }
  return d
}

async function until (check, ms, what) {
  const deadline = Date.now() + ms
  for (;;) {
    if (await check()) return
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise(resolve => setTimeout(resolve, 50))
  }
}

const median = values => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

export async function benchMirrors (root, report) {
  const primary = await startService(join(root, 'primary'))
  let mirror = await startService(join(root, 'mirror'))
  const alone = await device(root, 'alone', primary)
  const mirrored = await device(root, 'mirrored', primary, mirror)
  const caughtUp = async (d, cid) => { const m = (await d.status()).mirrors[0]; return m.objectsBehind === 0 && m.publishesBehind === 0 && m.lastPublish?.cid === cid }
  try {
    // Interleaved, so that a busy machine weighs on both alike; the mirrored device's copies run
    // in the background meanwhile, never waited for.
    const times = { alone: [], mirrored: [] }
    let last
    for (let i = 0; i < PUBLISHES; i++) {
      times.alone.push((await alone.publish()).ms)
      const p = await mirrored.publish()
      times.mirrored.push(p.ms)
      last = p.cid
    }
    await until(() => caughtUp(mirrored, last), 300_000, 'the mirror caught up')
    const a = median(times.alone)
    const m = median(times.mirrored)
    report(`publish time with one mirror (median of ${PUBLISHES}, a ${FILE_BYTES / 1024} KiB stored file each)`, `${m.toFixed(0)} ms`, `no mirror ${a.toFixed(0)} ms`, `${(m / a).toFixed(2)}x`, '<= 1.10x')

    // Down for DOWN publishes, then back: every publish on it, timed from its return.
    await mirror.stop()
    const manifests = []
    const down = []
    for (let i = 0; i < DOWN; i++) {
      const p = await mirrored.publish()
      manifests.push(p.cid)
      down.push(p.ms)
    }
    const behind = (await mirrored.status()).mirrors[0]
    mirror = await startService(join(root, 'mirror'), new URL(mirror.url).host)
    const started = performance.now()
    await until(() => caughtUp(mirrored, manifests.at(-1)), 600_000, 'the mirror caught up after being down')
    const catchUp = performance.now() - started
    const clients = createServiceClients({ dealUrl: mirror.url, apiUrl: mirror.url, pointerUrl: mirror.url, uploadUrl: mirror.url, gateways: [mirror.url] }, { apiKey: () => undefined, sessionToken: () => undefined })
    let held = 0
    try {
      for (const [i, cid] of manifests.entries()) {
        await clients.gateway.fetchVerified(cid, cidProfile('kubo-cidv1'), join(root, `check-${i}`))
        held++
      }
    } finally {
      await clients.close()
    }
    report(`catch-up after the mirror was down for ${DOWN} publishes (${behind.objectsBehind} objects behind)`, `${(catchUp / 1000).toFixed(1)} s`, `publish while down: median ${median(down).toFixed(0)} ms`, `${held} of ${DOWN} publishes on the mirror`, 'no publish lost')
    if (held !== DOWN) throw new Error(`only ${held} of ${DOWN} publishes reached the mirror`)
  } finally {
    await alone.stop()
    await mirrored.stop()
    await mirror.stop()
    await primary.stop()
  }
}
