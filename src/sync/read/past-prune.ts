import { readdir, rm, stat, utimes } from 'node:fs/promises'
import { join } from 'node:path'
import { processAlive } from '../../util/process-alive.js'

/**
 * How many past publishes' indexes `past/` keeps, the most recently used: each is a whole index
 * (hundreds of MB at a million files), and a user browsing history asks for a few times at most.
 */
export const PAST_KEEP = 4
/** `past/` holds a handful of names; a listing past this many is not ours to walk. */
const MAX_NAMES = 10_000
const BUILT = /^([A-Za-z0-9]{1,200})\.sqlite$/
const COMPANION = /^([A-Za-z0-9]{1,200})(?:\.search)?\.sqlite(?:-wal|-shm|-journal)?$/
const BUILDING = /^[A-Za-z0-9]{1,200}\.sqlite\.building-(\d{1,10})(?:-wal|-shm|-journal)?$/

/** Marks a built past index as just used: the prune keeps the most recently used. */
export async function touchPast (indexPath: string): Promise<void> {
  const now = new Date()
  await utimes(indexPath, now, now).catch(() => {})
}

/**
 * Keeps `past/` to the {@link PAST_KEEP} most recently used indexes (with their search caches)
 * and removes what a build killed midway left (`.building-<pid>` of a process that is gone).
 * `keep`: the one just asked for, never removed. A removed index is built again if asked for;
 * one open elsewhere (the daemon's page) stays readable until closed.
 */
export async function prunePast (dir: string, keep: string): Promise<{ removed: string[] }> {
  const names = (await readdir(dir).catch(() => [] as string[])).slice(0, MAX_NAMES)
  const removed: string[] = []
  const built: Array<{ name: string, usedAt: number }> = []
  for (const name of names) {
    const building = BUILDING.exec(name)
    if (building !== null) {
      if (!processAlive(Number(building[1]))) removed.push(name)
      continue
    }
    const match = BUILT.exec(name)
    if (match === null || match[1] === keep) continue
    const usedAt = (await stat(join(dir, name)).catch(() => undefined))?.mtimeMs
    if (usedAt !== undefined) built.push({ name: match[1] as string, usedAt })
  }
  const old = new Set(built.sort((a, b) => b.usedAt - a.usedAt).slice(PAST_KEEP - 1).map(b => b.name))
  for (const name of names) {
    const base = COMPANION.exec(name)?.[1]
    if (base !== undefined && old.has(base)) removed.push(name)
  }
  for (const name of removed) await rm(join(dir, name), { force: true })
  return { removed }
}
