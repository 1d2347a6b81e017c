import { expect } from 'vitest'
import { createHash, randomBytes } from 'node:crypto'
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { runCli } from '../helpers/cli.js'
import { ok, SMALL_LAYOUT, type ContentDevice } from './content-devices.js'

/**
 * Versions of a small storing folder, for the forget and prune crash and race tests: each
 * version changes `doc.txt` and `big.bin` (an old version's content is what a prune deletes)
 * and keeps `same.txt`. What each publish held is remembered by its time, to check a restore.
 */
export const VERSION_FILES = ['doc.txt', 'big.bin', 'same.txt'] as const

export interface PruneJson { dryRun: boolean, deleted: { root: number, content: number, segment: number, manifest: number }, bytes: number, young: number, chainsHeld: number }
export interface ForgetJson { kept: number, forgotten: number, head: string | null, pointer: string }
export interface HistoryRow { cid: string, at: string, device: string, previous: string | null }

/** Every object a prune deleted, whatever its kind. */
export const deletedOf = (p: PruneJson): number => p.deleted.root + p.deleted.content + p.deleted.segment + p.deleted.manifest

export interface VersionsOptions {
  /** The size of `big.bin`, the file each version replaces. */
  readonly bigBytes?: number
  /** The first version's publish time, less an hour; each version is an hour after the last. */
  readonly start?: string
  /**
   * `cycle.bin` too (this many bytes), alternately one of two contents: a version holds again
   * what a prune may have deleted since the version before last held it.
   */
  readonly cycleBytes?: number
}

/** A publish refused because another device moved the pointer meanwhile: run it again. */
const CONTENDED = /\[ERR_(?:PUBLISH|FORGET|PRUNE)_CONTENDED\]/

/** The files of each version published, by the publish's time, as SHA-256 by name. */
export class Versions {
  private readonly held = new Map<string, Map<string, string>>()
  private readonly cycle: Buffer[]
  private count = 0
  /** Publishes another device's publish outran, then made again. */
  contended = 0

  constructor (private readonly d: ContentDevice, private readonly options: VersionsOptions = {}) {
    const bytes = options.cycleBytes ?? 0
    this.cycle = bytes === 0 ? [] : [randomBytes(bytes), randomBytes(bytes)]
  }

  /** Writes a new version of the folder and publishes it at the next hour; answers its time. */
  async publish (): Promise<string> {
    const n = ++this.count
    const at = new Date(Date.parse(this.options.start ?? '2026-03-01T00:00:00.000Z') + n * 3_600_000).toISOString()
    await writeFile(join(this.d.folder, 'doc.txt'), `version ${n} ${randomBytes(8).toString('hex')}\n`)
    await writeFile(join(this.d.folder, 'big.bin'), randomBytes((this.options.bigBytes ?? 300 * 1024) + n))
    await writeFile(join(this.d.folder, 'same.txt'), 'the same in every version\n')
    const names: string[] = [...VERSION_FILES]
    if (this.cycle.length > 0) {
      await writeFile(join(this.d.folder, 'cycle.bin'), this.cycle[n % 2] as Buffer)
      names.push('cycle.bin')
    }
    const files = new Map<string, string>()
    for (const name of names) files.set(name, sha(await readFile(join(this.d.folder, name))))
    // Bounded: another device publishing or forgetting each time would be a loop.
    for (let tries = 1; ; tries++) {
      const published = await this.d.run(['snapshot'], { CIDSYNC_TEST_CLOCK: at })
      if (published.code === 0) break
      expect(CONTENDED.test(published.stderr) && tries < 5, `${this.d.name}: snapshot: ${published.stderr}`).toBe(true)
      this.contended++
    }
    this.held.set(at, files)
    return at
  }

  /** The files of the last version published. */
  latest (): Map<string, string> {
    return [...this.held.values()].at(-1) ?? new Map()
  }

  /**
   * What the publish of `at` held: the newest version at or before it. A publish's time is the
   * test clock's start plus the little the process ran before it stamped the manifest.
   */
  at (at: string): Map<string, string> | undefined {
    const time = Date.parse(at)
    const before = [...this.held.keys()].filter(k => Date.parse(k) <= time).sort()
    const newest = before.at(-1)
    return newest === undefined || time - Date.parse(newest) > 60_000 ? undefined : this.held.get(newest)
  }
}

/**
 * `d`'s own files of its last publish come back whole with `get`, each as `want` says. Its own:
 * without `--device`, `get` takes each path's newest version of any device.
 */
export async function expectLatestRestorable (d: ContentDevice, want: Map<string, string>, scratch: string, context: string): Promise<void> {
  await rm(scratch, { recursive: true, force: true })
  const own = (await readFile(join(d.state, 'device-id'), 'utf8')).trim()
  const got = await d.run(['get', ...[...want.keys()].map(f => `notes/${f}`), '--to', scratch, '--device', own])
  expect(got.code, `${context}: get: ${got.stderr}`).toBe(0)
  for (const [name, hash] of want) expect(sha(await readFile(join(scratch, 'notes', name))), `${context}: ${name}`).toBe(hash)
  await rm(scratch, { recursive: true, force: true })
}

export const sha = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex')

export async function history (d: ContentDevice): Promise<HistoryRow[]> {
  return JSON.parse((await ok(d, ['history', '--json'])).stdout) as HistoryRow[]
}

/**
 * Every publish `history` lists (or its `newest` ones) comes back whole: `get --at` its time gives
 * each file as it was. `verify --full` passes too. Answers the times `history` lists.
 */
export async function expectKeptRestorable (d: ContentDevice, versions: Versions, scratch: string, context: string, newest = Infinity): Promise<string[]> {
  const verified = await d.run(['verify', '--full'])
  expect(verified.code, `${context}: verify --full: ${verified.stdout}${verified.stderr}`).toBe(0)
  const rows = await history(d)
  for (const row of rows.slice(0, newest)) {
    const want = versions.at(row.at)
    expect(want, `${context}: a publish of ${row.at} that no version made`).toBeDefined()
    await rm(scratch, { recursive: true, force: true })
    const got = await d.run(['get', ...[...(want ?? new Map<string, string>()).keys()].map(f => `notes/${f}`), '--to', scratch, '--at', row.at])
    expect(got.code, `${context}: get --at ${row.at}: ${got.stderr}`).toBe(0)
    for (const [name, hash] of want ?? []) expect(sha(await readFile(join(scratch, 'notes', name))), `${context}: ${name} at ${row.at}`).toBe(hash)
  }
  await rm(scratch, { recursive: true, force: true })
  return rows.map(r => r.at)
}

/** Files a forget or prune left in the state dir's `snapshots/` (their names start with the command). */
export async function retentionLeftovers (d: ContentDevice): Promise<string[]> {
  const names = await readdir(join(d.state, 'snapshots')).catch(() => [] as string[])
  return names.filter(n => /^(?:forget|prune)-/.test(n))
}

/** A device on an embedded service dir, as the quick start makes one, with `extra` config after `[snapshot]`. */
export async function embeddedDevice (root: string, name: string, service: string, extra: string): Promise<ContentDevice> {
  await mkdir(join(root, name, 'notes'), { recursive: true })
  const config = join(root, `${name}.toml`)
  await writeFile(config, `state_dir = "${name}/state"\nnamespace = "prune-embedded"\n[[folders]]\nname = "notes"\npath = "${name}/notes"\nstore = true\n` +
    `[status]\nlisten = "127.0.0.1:0"\n[service]\ndir = "${service}"\n[snapshot]\ndeal = false\n${extra}`)
  const env = { ...process.env, ...SMALL_LAYOUT }
  return {
    name, config, state: join(root, name, 'state'), folder: join(root, name, 'notes'), env,
    run: async (args, more = {}) => await runCli([...args, '--config', config], { env: { ...env, ...more }, timeoutMs: 120_000 })
  }
}

/** Bytes of an embedded service's pack files. */
export async function packBytes (service: string): Promise<number> {
  let sum = 0
  for (const name of await readdir(join(service, 'packs'))) sum += (await stat(join(service, 'packs', name))).size
  return sum
}

/**
 * The index pointer as the service's database in `dir` holds it (never the prune list's beside
 * it); set back to `to` when given, as a service restored from a backup would be.
 */
export function servicePointer (dir: string, to?: string): string {
  const db = new Database(join(dir, 'service.sqlite'))
  try {
    const index = "network NOT LIKE '%~prune-list'"
    if (to !== undefined) db.prepare(`UPDATE pointers SET snapshot_cid = ? WHERE ${index}`).run(to)
    return db.prepare(`SELECT snapshot_cid FROM pointers WHERE ${index}`).pluck().get() as string
  } finally {
    db.close()
  }
}
