import { expect } from 'vitest'
import { spawn } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises'
import { join, relative } from 'node:path'
import Database from 'better-sqlite3'
import { CLI, runCli, type CliResult } from '../helpers/cli.js'
import type { LocalService } from './v2-cli.js'
import { bound } from '../helpers/wait.js'

/**
 * Devices that store content, run as processes against a local service the test started (so
 * its request log and uploads listing count what they sent), for the content custody tests.
 */
export interface ContentDevice {
  readonly name: string
  readonly config: string
  readonly state: string
  readonly folder: string
  readonly env: NodeJS.ProcessEnv
  run: (args: string[], extra?: NodeJS.ProcessEnv) => Promise<CliResult>
}

/**
 * The start of the retention tests: `doc.bin` (these bytes) and `other.txt` published at 01:00,
 * `between` run, then `doc.bin` deleted and published at 02:00. So only a forgotten publish holds it.
 */
export async function storedThenDeleted (a: ContentDevice, bytes: Buffer, between: () => Promise<unknown> = async () => {}): Promise<void> {
  await writeFile(join(a.folder, 'doc.bin'), bytes)
  await writeFile(join(a.folder, 'other.txt'), 'stays')
  await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T01:00:00.000Z' })
  await between()
  await rm(join(a.folder, 'doc.bin'))
  await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T02:00:00.000Z' })
}

/** Small parts and packs (docs/content-format.md): a file of a few MiB spans many parts. */
export const SMALL_LAYOUT = { CIDSYNC_TEST_PART_CHUNKS: '2', CIDSYNC_TEST_PACK_BLOBS: '40' }

export async function contentDevice (root: string, service: LocalService, name: string, extraConfig = ''): Promise<ContentDevice> {
  const url = service.local.url
  const folder = join(root, name, 'notes')
  await mkdir(folder, { recursive: true })
  const config = join(root, `${name}.toml`)
  await writeFile(config, `state_dir = "${name}/state"\nnamespace = "content-faults"\n[[folders]]\nname = "notes"\npath = "${name}/notes"\nstore = true\n` +
    `[status]\nlisten = "127.0.0.1:0"\n[service]\nmode = "remote"\ndeal_url = "${url}"\napi_url = "${url}"\npointer_url = "${url}"\nupload_url = "${url}"\n` +
    `gateways = ["${url}"]\n[snapshot]\ndeal = false\n${extraConfig}`)
  const env = { ...process.env, ...SMALL_LAYOUT, CIDSYNC_API_KEY: service.apiKey, CIDSYNC_SESSION_TOKEN: service.local.issueToken(service.address) }
  return {
    name, config, state: join(root, name, 'state'), folder, env,
    run: async (args, extra = {}) => await runCli([...args, '--config', config], { env: { ...env, ...extra }, timeoutMs: 120_000 })
  }
}

export async function ok (d: ContentDevice, args: string[], extra?: NodeJS.ProcessEnv): Promise<CliResult> {
  const result = await d.run(args, extra)
  expect(result.code, `${d.name}: ${args.join(' ')}: ${result.stderr}`).toBe(0)
  return result
}

export async function shareKey (from: ContentDevice, to: ContentDevice): Promise<void> {
  const exported = await ok(from, ['key', 'export'])
  const imported = await runCli(['key', 'import', '--config', to.config], { input: exported.stdout, env: to.env })
  expect(imported.code, imported.stderr).toBe(0)
}

/**
 * A random kill delay whose ceiling adapts to how fast this machine finishes a run: halved each
 * time a run ended before its kill, grown back after each kill. A fixed ceiling let a fast
 * machine finish most resumed runs first, so the kills never came (seen in CI).
 */
export class KillDelay {
  private ceiling: number
  constructor (private readonly max: number, private readonly min = 5) { this.ceiling = max }
  next (): number { return Math.floor(Math.random() * this.ceiling) }
  ended (killed: boolean): void {
    this.ceiling = killed ? Math.min(this.max, this.ceiling * 1.25) : Math.max(this.min, this.ceiling / 2)
  }
}

/**
 * Runs `cidsync ...args` and kills it with SIGKILL once `ready` holds (polled) and then `delayMs`
 * more have passed; answers whether it was killed or how it ended on its own first.
 */
export async function runAndKill (d: ContentDevice, args: string[], ready: () => boolean, delayMs: number): Promise<{ killed: boolean, code: number | null, stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args, '--config', d.config], { env: d.env, stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (b: Buffer) => { stderr += b.toString() })
  const closed = new Promise<[number | null, NodeJS.Signals | null]>(resolve => child.on('close', (c, s) => resolve([c, s])))
  let exited = false
  void closed.then(() => { exited = true })
  const deadline = Date.now() + bound(60_000)
  while (!exited && !ready() && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 5))
  if (!exited) await new Promise(resolve => setTimeout(resolve, delayMs))
  const killed = !exited && child.kill('SIGKILL')
  const timer = setTimeout(() => child.kill('SIGKILL'), bound(60_000))
  const [code, signal] = await closed
  clearTimeout(timer)
  return { killed: killed && signal === 'SIGKILL', code, stderr }
}

/** Every regular file under `dir` by its path from there, with its SHA-256 (names starting with `.` included). */
export async function tree (dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>()
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue
    const path = join(entry.parentPath, entry.name)
    out.set(relative(dir, path), createHash('sha256').update(await readFile(path)).digest('hex'))
  }
  return out
}

/** Writes a large file (many parts) and `small` files (several packs) under `dir/sub`. */
export async function writeSomeFiles (dir: string, sub: string, options: { largeBytes: number, small: number }): Promise<void> {
  await mkdir(join(dir, sub), { recursive: true })
  await writeFile(join(dir, sub, 'large.bin'), randomBytes(options.largeBytes))
  for (let i = 0; i < options.small; i++) await writeFile(join(dir, sub, `small-${i}.txt`), randomBytes(200 + ((i * 977) % 6000)))
}

/** Every object a device's content records name (read from its index after its processes ended). */
export function contentObjects (d: ContentDevice): Set<string> {
  const db = new Database(join(d.state, 'index.sqlite'), { readonly: true })
  try {
    const objects = new Set<string>()
    for (const row of db.prepare('SELECT objects FROM content').pluck().all() as string[]) {
      for (const [object] of JSON.parse(row) as Array<[string, number, number]>) objects.add(object)
    }
    return objects
  } finally {
    db.close()
  }
}

/** How many times each CID was uploaded to the account, from the uploads listing. */
export async function uploadCounts (service: LocalService): Promise<Map<string, number>> {
  const counts = new Map<string, number>()
  for await (const record of service.clients.files()) counts.set(record.cid, (counts.get(record.cid) ?? 0) + 1)
  return counts
}
