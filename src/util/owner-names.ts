import { readFileSync, statSync } from 'node:fs'

/** The most of /etc/passwd or /etc/group read: a file past it is read no further (names then stay unknown). */
const MAX_BYTES = 16 * 1024 * 1024
/** A name not found is looked up again at most this often (an account added while the daemon runs). */
const RELOAD_MS = 60_000

interface Table { readonly byId: Map<number, string>, readonly byName: Map<string, number>, readonly mtimeMs: number }

function readTable (path: string): Table {
  const byId = new Map<number, string>()
  const byName = new Map<string, number>()
  let mtimeMs = 0
  try {
    const stats = statSync(path)
    mtimeMs = stats.mtimeMs
    if (stats.size <= MAX_BYTES) {
      for (const line of readFileSync(path, 'utf8').split('\n')) {
        const [name, , id] = line.split(':')
        if (name === undefined || id === undefined || name === '' || name.startsWith('#') || !/^\d{1,10}$/.test(id)) continue
        const n = Number(id)
        if (!byId.has(n)) byId.set(n, name)
        if (!byName.has(name)) byName.set(name, n)
      }
    }
  } catch {
    // No such file (a container, Windows): names stay unknown, ids are kept.
  }
  return { byId, byName, mtimeMs }
}

/** One of the two tables, read when first asked and again when the file changed. */
class NameTable {
  private table: Table | undefined
  private checkedAt = 0

  constructor (private readonly path: string) {}

  name (id: number): string | null {
    return this.current(this.loaded().byId.has(id)).byId.get(id) ?? null
  }

  id (name: string): number | undefined {
    return this.current(this.loaded().byName.has(name)).byName.get(name)
  }

  private loaded (): Table {
    this.table ??= readTable(this.path)
    return this.table
  }

  /** A miss reloads the file when it changed, at most once a {@link RELOAD_MS}. */
  private current (hit: boolean): Table {
    const table = this.loaded()
    if (hit || Date.now() - this.checkedAt < RELOAD_MS) return table
    this.checkedAt = Date.now()
    let mtimeMs = 0
    try { mtimeMs = statSync(this.path).mtimeMs } catch {}
    if (mtimeMs !== table.mtimeMs) this.table = readTable(this.path)
    return this.table as Table
  }
}

const users = new NameTable('/etc/passwd')
const groups = new NameTable('/etc/group')

/** The user's name for a uid on this device, or null. */
export function userName (uid: number): string | null { return users.name(uid) }

/** The group's name for a gid on this device, or null. */
export function groupName (gid: number): string | null { return groups.name(gid) }

/** The uid this device gives a user's name, or undefined. */
export function userId (name: string): number | undefined { return users.id(name) }

/** The gid this device gives a group's name, or undefined. */
export function groupId (name: string): number | undefined { return groups.id(name) }
