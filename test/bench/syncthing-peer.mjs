// Debian's syncthing as the lean bench's peer: one process (--no-restart), its own home, loopback GUI only,
// announce, relays and NAT off, one send-only folder over the bench's tree.
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync } from 'node:fs'
import { createServer } from 'node:net'
import { treeMemOf } from './data.mjs'

const BIN = '/usr/bin/syncthing'
const API_KEY = 'cidsync-lean-bench'

export const syncthingPresent = () => existsSync(BIN)

export function syncthingVersion () {
  return spawnSync(BIN, ['--version'], { encoding: 'utf8' }).stdout.trim().split(' ').slice(0, 2).join(' ')
}

async function freePort () {
  const server = createServer()
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address()
  await new Promise(resolve => server.close(resolve))
  return port
}

const sleep = (ms) => new Promise(resolve => setTimeout(resolve, ms))

/**
 * Memory is summed over syncthing's monitor process and the child it starts (even with
 * --no-restart): both are what a user's machine holds for it. Starts syncthing over `home`; the first start adds the folder `tree`. Resolves when the folder is
 * idle with `files` local files: ms from spawn, peak RSS until then (VmHWM) and the child.
 */
export async function syncthingUntilIdle (home, tree, files, { timeoutMs = 1_800_000 } = {}) {
  mkdirSync(home, { recursive: true })
  const port = await freePort()
  const started = performance.now()
  const child = spawn(BIN, ['serve', `--home=${home}`, '--no-browser', '--no-restart', '--no-upgrade', '--no-default-folder',
    '--skip-port-probing', `--gui-address=http://127.0.0.1:${port}`, `--gui-apikey=${API_KEY}`, '--logflags=0'],
  { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, STNODEFAULTFOLDER: '1', STNOUPGRADE: '1', STNORESTART: '1' } })
  let stderr = ''
  child.stderr.on('data', d => { stderr = (stderr + d.toString()).slice(-4000) })
  let exited = false
  child.on('exit', () => { exited = true })
  const api = async (method, path, body) => {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { method, headers: { 'X-API-Key': API_KEY, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
    if (!res.ok) throw new Error(`syncthing ${method} ${path}: ${res.status} ${await res.text()}`)
    const text = await res.text()
    return text === '' ? undefined : JSON.parse(text)
  }
  const deadline = Date.now() + timeoutMs
  const waitFor = async (what, check) => {
    for (;;) {
      if (exited) throw new Error(`syncthing exited while waiting for ${what}:\n${stderr}`)
      if (Date.now() > deadline) { child.kill('SIGKILL'); throw new Error(`syncthing: no ${what} in ${timeoutMs} ms:\n${stderr}`) }
      const answer = await check().catch(() => false)
      if (answer) return answer
      await sleep(200)
    }
  }
  await waitFor('API', async () => (await api('GET', '/rest/system/ping'))?.ping === 'pong')
  const folders = await api('GET', '/rest/config/folders')
  if (!folders.some(f => f.id === 'bench')) {
    await api('PATCH', '/rest/config/options', { globalAnnounceEnabled: false, localAnnounceEnabled: false, relaysEnabled: false, natEnabled: false, urAccepted: -1, autoUpgradeIntervalH: 0, crashReportingEnabled: false, startBrowser: false })
    await api('PUT', '/rest/config/folders/bench', { id: 'bench', label: 'bench', path: tree, type: 'sendonly', rescanIntervalS: 3600, fsWatcherEnabled: true, fsWatcherDelayS: 10 })
  }
  await waitFor('idle folder', async () => {
    const status = await api('GET', '/rest/db/status?folder=bench')
    return status.state === 'idle' && status.localFiles === files
  })
  const ms = performance.now() - started
  return { ms, peak: treeMemOf(child.pid).hwm, child, api }
}

/** Stops syncthing through its API (SIGTERM after 15 s, SIGKILL after 30 s). */
export async function stopSyncthing (run) {
  const { child } = run
  if (child.exitCode !== null) return
  const exited = new Promise(resolve => child.on('exit', resolve))
  await run.api('POST', '/rest/system/shutdown').catch(() => child.kill('SIGTERM'))
  const term = setTimeout(() => child.kill('SIGTERM'), 15_000)
  const kill = setTimeout(() => child.kill('SIGKILL'), 30_000)
  await exited
  clearTimeout(term)
  clearTimeout(kill)
}
