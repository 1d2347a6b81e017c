import { spawn, type ChildProcess } from 'node:child_process'
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile, lstat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { afterEach, expect, onTestFinished } from 'vitest'
import Database from 'better-sqlite3'
import { CLI, runCli, type CliResult } from '../helpers/cli.js'
import { bound } from '../helpers/wait.js'

/**
 * Proof suites run at two sizes: CI (the default, small enough for `npm run test:slow`) and full
 * (`npm run proof`, which sets CIDSYNC_PROOF_SCALE=full). `size(ci, full)` picks one.
 */
export const FULL = process.env.CIDSYNC_PROOF_SCALE === 'full'
export const size = <T>(ci: T, full: T): T => FULL ? full : ci

/**
 * A test's time limit: what the CI size needs on a quiet machine, scaled like every bound
 * (WAIT_SCALE: a slower or busier machine only takes longer), and room for the full size.
 */
export const limit = (ciMs: number, fullMs: number): number => size(bound(ciMs), fullMs)

/**
 * A seeded generator (mulberry32): the seed comes from CIDSYNC_PROOF_SEED or the clock and is
 * printed, so a failing run can be replayed exactly.
 */
export function seeded (suite: string): { seed: number, next: () => number, int: (n: number) => number, pick: <T>(items: readonly T[]) => T } {
  const seed = process.env.CIDSYNC_PROOF_SEED !== undefined ? Number(process.env.CIDSYNC_PROOF_SEED) : Date.now() % 2 ** 31
  console.log(`[proof] ${suite}: seed ${seed} (replay with CIDSYNC_PROOF_SEED=${seed})`)
  let state = seed >>> 0
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32
  }
  const int = (n: number): number => Math.floor(next() * n)
  return { seed, next, int, pick: items => items[int(items.length)] as never }
}

/** One line of a suite's results, printed and kept for docs/reliability.md. */
export function report (suite: string, result: Record<string, unknown>): void {
  console.log(`[proof] ${suite} ${FULL ? 'full' : 'ci'}: ${JSON.stringify(result)}`)
}

/** A fresh directory for this test, removed when it finishes, passed or failed or timed out. */
export async function proofDir (): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'cidsync-proof-'))
  onTestFinished(async () => { await rm(dir, { recursive: true, force: true, maxRetries: 3 }) })
  return dir
}

export interface Device { readonly config: string, readonly state: string, readonly folder: string, readonly root: string }

/**
 * A device: a config in `root`, its folder `NAME/notes` and state `NAME/state`. `service` is the
 * embedded service's shared dir (the default) or a remote base URL with its credentials beside
 * the config.
 */
export async function device (root: string, name: string, options: { serviceDir?: string, remoteUrl?: string, extra?: string, status?: string } = {}): Promise<Device> {
  const folder = join(root, name, 'notes')
  await mkdir(folder, { recursive: true })
  const config = join(root, name, 'cidsync.toml')
  const service = options.remoteUrl !== undefined
    ? `mode = "remote"\ndeal_url = "${options.remoteUrl}"\napi_url = "${options.remoteUrl}"\npointer_url = "${options.remoteUrl}"\nupload_url = "${options.remoteUrl}"\ngateways = ["${options.remoteUrl}"]\n`
    : `dir = "${options.serviceDir ?? join(root, 'service')}"\n`
  // Top-level keys first: TOML puts every key after a table header into that table.
  const [top, rest] = splitTopLevel(options.extra ?? '')
  await writeFile(config, `${top}state_dir = "state"\n[[folders]]\nname = "notes"\npath = "notes"\n[service]\n${service}[status]\nlisten = "${options.status ?? '127.0.0.1:0'}"\n${rest}`)
  return { config, state: join(root, name, 'state'), folder, root: join(root, name) }
}

function splitTopLevel (extra: string): [string, string] {
  const at = extra.indexOf('[')
  return at < 0 ? [extra, ''] : [extra.slice(0, at), extra.slice(at)]
}

/** Every regular file under `dir`, `/`-separated relative path → size. */
export async function walk (dir: string): Promise<Map<string, number>> {
  const found = new Map<string, number>()
  const pending = [dir]
  while (pending.length > 0) {
    const current = pending.pop() as string
    for (const entry of await readdir(current, { withFileTypes: true })) {
      const path = join(current, entry.name)
      if (entry.isDirectory()) pending.push(path)
      else if (entry.isFile()) found.set(relative(dir, path).split('\\').join('/'), (await lstat(path)).size)
    }
  }
  return found
}

/** A row as `ls --json` prints it; read from the db, `updatedAt` and `mtimeMs` are ms numbers. */
export interface Row { device: string, folder: string, path: string, size: number, cid: string | null, updatedAt: any, mtimeMs?: number, deleted: boolean, seq: number }

/** `cidsync ls --json` (this device's live rows, or every device's). */
export async function ls (config: string, allDevices = false): Promise<Row[]> {
  const result = await runCli(['ls', '--json', ...(allDevices ? ['--all-devices'] : []), '--config', config], { timeoutMs: 60_000 })
  if (result.code !== 0) throw new Error(`cidsync ls exited ${String(result.code)}: ${result.stderr}`)
  return JSON.parse(result.stdout) as Row[]
}

/**
 * The index's rows read straight from `index.sqlite` (read-only, beside a running daemon as WAL
 * allows): cheaper than a process per check. `allDevices` false: this device's live rows.
 */
export async function rows (d: Device, allDevices = false): Promise<Row[]> {
  const self = allDevices ? '' : (await readFile(join(d.state, 'device-id'), 'utf8')).trim()
  const db = new Database(join(d.state, 'index.sqlite'), { readonly: true, fileMustExist: true })
  try {
    db.pragma('busy_timeout = 5000')
    // Files and links: a directory's row (its path ends with /) is no file of the walk's.
    const all = db.prepare("SELECT device_id AS device, folder, path, size, cid, updated_at AS updatedAt, mtime_ms AS mtimeMs, deleted, seq FROM entries WHERE kind IS NOT 'dir'").all() as Array<Omit<Row, 'deleted'> & { deleted: number }>
    return all.map(r => ({ ...r, deleted: r.deleted === 1 })).filter(r => allDevices || (r.device === self && !r.deleted))
  } finally {
    db.close()
  }
}

/** The differences between the index and the folder: missing rows, extra rows, wrong sizes, duplicates. */
export async function drift (d: Device, viaCli = false): Promise<{ missing: string[], extra: string[], wrongSize: string[], duplicates: string[] }> {
  const disk = await walk(d.folder)
  const indexed = viaCli ? await ls(d.config) : await rows(d)
  const seen = new Map<string, number>()
  const duplicates: string[] = []
  for (const r of indexed) {
    if (seen.has(r.path)) duplicates.push(r.path)
    seen.set(r.path, r.size)
  }
  return {
    missing: [...disk.keys()].filter(p => !seen.has(p)).sort(),
    extra: [...seen.keys()].filter(p => !disk.has(p)).sort(),
    wrongSize: [...disk].filter(([p, s]) => seen.has(p) && seen.get(p) !== s).map(([p]) => p).sort(),
    duplicates
  }
}

/** Asserts the index holds exactly the folder's files, each once, with its size. */
export async function expectIndexEqualsFolder (d: Device, context = '', viaCli = false): Promise<void> {
  const diff = await drift(d, viaCli)
  const clip = (list: string[]): string[] => list.length > 10 ? [...list.slice(0, 10), `... ${list.length - 10} more`] : list
  expect({ missing: clip(diff.missing), extra: clip(diff.extra), wrongSize: clip(diff.wrongSize), duplicates: clip(diff.duplicates) }, context)
    .toEqual({ missing: [], extra: [], wrongSize: [], duplicates: [] })
}

/** Runs a CLI command that must succeed, failing with its output otherwise. */
export async function ok (args: string[], options: Parameters<typeof runCli>[1] = {}): Promise<CliResult> {
  const result = await runCli(args, { timeoutMs: 60_000, ...options })
  if (result.code !== 0) throw new Error(`cidsync ${args.join(' ')} exited ${String(result.code)} (${String(result.signal)}):\n${result.stderr}`)
  return result
}

/** Gives a second device the first one's snapshot key. */
export async function shareKey (from: Device, to: Device): Promise<void> {
  await ok(['key', 'import', '--force', '--config', to.config], { input: (await ok(['key', 'export', '--config', from.config])).stdout })
}

/** A CLI process killed with SIGKILL after `ms`: answers how it ended. */
export async function killAfter (args: string[], ms: number, env: NodeJS.ProcessEnv = process.env): Promise<{ code: number | null, signal: NodeJS.Signals | null, stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
  const timer = setTimeout(() => child.kill('SIGKILL'), ms)
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>(resolve => child.on('close', (c, s) => resolve([c, s])))
  clearTimeout(timer)
  return { code, signal, stderr }
}

/** Writes `count` small files of seeded sizes under `dir`, `perDir` to a directory. */
export async function writeFiles (dir: string, count: number, rng: { int: (n: number) => number }, prefix = 'f', perDir = 50): Promise<void> {
  for (let i = 0; i < count; i++) {
    const sub = join(dir, `${prefix}${Math.floor(i / perDir)}`)
    if (i % perDir === 0) await mkdir(sub, { recursive: true })
    await writeFile(join(sub, `${prefix}-${i}.txt`), `${prefix} ${i} `.repeat(1 + rng.int(40)))
  }
}

const services: ChildProcess[] = []
afterEach(() => { for (const s of services.splice(0)) if (s.exitCode === null) s.kill('SIGKILL') })

/** `cidsync local-service` as its own process (the self-hosted backend), its base URL once it prints it. */
export async function serviceProcess (dir: string, args: string[] = []): Promise<{ url: string, dir: string, child: ChildProcess }> {
  await mkdir(dir, { recursive: true })
  const child = spawn(process.execPath, [CLI, 'local-service', '--dir', dir, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  services.push(child)
  let stderr = ''
  child.stderr?.on('data', (d: Buffer) => { stderr += d.toString() })
  const url = await new Promise<string>((resolve, reject) => {
    let out = ''
    const timer = setTimeout(() => reject(new Error(`the local service printed no URL in ${bound(15)} s:\n${stderr}`)), bound(15_000))
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString()
      const line = /^(http:\/\/\S+)\n/.exec(out)
      if (line !== null) { clearTimeout(timer); resolve(line[1] as string) }
    })
    child.on('close', code => { clearTimeout(timer); reject(new Error(`the local service exited ${String(code)}:\n${stderr}`)) })
  })
  return { url, dir, child }
}

/**
 * A request to the local service's admin routes (`/local/...`). The admin token, when the service
 * keeps one in its directory (a file whose name says admin), is sent as a bearer token.
 */
export async function admin (base: string, serviceDir: string, method: string, path: string, body?: unknown): Promise<{ status: number, body: unknown }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  const token = await adminToken(serviceDir)
  if (token !== undefined) headers.authorization = `Bearer ${token}`
  const res = await fetch(`${base}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  const text = await res.text()
  let parsed: unknown = text
  try { parsed = JSON.parse(text) } catch {}
  return { status: res.status, body: parsed }
}

export async function adminToken (serviceDir: string): Promise<string | undefined> {
  let names: string[] = []
  try { names = await readdir(serviceDir) } catch { return undefined }
  const file = names.find(n => /admin/i.test(n) && !n.startsWith('.'))
  return file === undefined ? undefined : (await readFile(join(serviceDir, file), 'utf8')).trim()
}

/** The status endpoint of a running daemon of `d`: its port and POST token, from the state dir. */
export async function statusOf (d: Device): Promise<{ port: number, token: string }> {
  const info = JSON.parse(await readFile(join(d.state, 'daemon.json'), 'utf8')) as { status: string }
  const token = (await readFile(join(d.state, 'status.token'), 'utf8')).trim()
  return { port: Number(info.status.split(':').pop()), token }
}

/**
 * A device in remote mode against `service`: a wallet signs in through `cidsync login` (the API
 * key lands beside the config), and the service's identity tool issues its session token.
 */
export async function remoteDevice (root: string, name: string, service: { url: string, dir: string }, options: { extra?: string, ttlSeconds?: number } = {}): Promise<Device & { address: string, walletKey: string }> {
  const { formatWalletKey, newWalletKey, walletAddress } = await import('../../src/crypto/index.js')
  const key = newWalletKey()
  const walletKey = formatWalletKey(key)
  const address = walletAddress(key)
  const d = await device(root, name, { remoteUrl: service.url, extra: options.extra })
  await ok(['login', '--config', d.config], { env: { ...process.env, CIDSYNC_WALLET_KEY: walletKey } })
  await renewToken(d, service, address, options.ttlSeconds ?? 30 * 86_400)
  return { ...d, address, walletKey }
}

/** Writes a fresh session token beside the config, as a user copying it from the dashboard. */
export async function renewToken (d: Device, service: { dir: string }, address: string, ttlSeconds: number): Promise<string> {
  const token = (await ok(['local-service', 'token', '--user', address, '--dir', service.dir, '--ttl-seconds', String(ttlSeconds)])).stdout.trim()
  await writeFile(join(d.root, 'session-token.new'), `${token}\n`, { mode: 0o600 })
  const { rename } = await import('node:fs/promises')
  await rename(join(d.root, 'session-token.new'), join(d.root, 'session-token'))
  return token
}

/** POSTs to a running daemon's status endpoint with its token (`/snapshot`, `/reconcile`, `/rescan`). */
export async function post (d: Device, path: string, ms = 120_000): Promise<{ status: number, body: string }> {
  const { port, token } = await statusOf(d)
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(ms) })
  return { status: res.status, body: await res.text() }
}

/** GET /status of a running daemon. */
export async function status (d: Device): Promise<Record<string, any>> {
  const { port } = await statusOf(d)
  const res = await fetch(`http://127.0.0.1:${port}/status`, { signal: AbortSignal.timeout(10_000) })
  const text = await res.text()
  if (res.status !== 200) throw new Error(`GET /status answered ${res.status}: ${text.slice(0, 500)}`)
  return JSON.parse(text) as Record<string, any>
}
