import { setTimeout as delay } from 'node:timers/promises'

/**
 * Directories read at once, across every watcher in the process. chokidar starts a read of every
 * directory it finds as soon as it finds it, so every listing of a large tree would be alive
 * together. A read holds its slot only while it lists one directory (no waiting on others), so the
 * limit cannot wedge.
 */
export const READS_AT_ONCE = 8
/**
 * Directories handed to chokidar and not listed yet (their own read waiting or under way). Each
 * costs chokidar a few KB while it waits: its async calls, a stream, a throttle timer. Handing over
 * a large tree's directories all at once fills V8's old space before the first full collection
 * (docs/benchmarks.md, "Memory beside syncthing"). Reads hand over more only below this.
 */
export const HANDED_OVER_AT_ONCE = 64
/**
 * A directory handed over is counted no longer than this: chokidar does not read one it finds
 * ignored or gone by then, and nothing says so; the budget must not leak.
 */
const HANDED_OVER_FOR_MS = 2_000

let free = READS_AT_ONCE
let mostAtOnce = 0
const queued: Array<() => void> = []

/** The most directory reads that were under way together since the process started (within {@link READS_AT_ONCE}). */
export function mostReadsAtOnce (): number {
  return mostAtOnce
}

/** Waits for a read slot; give it back with {@link releaseRead}. */
export async function readSlot (): Promise<void> {
  if (free === 0) await new Promise<void>(resolve => queued.push(resolve))
  else free--
  mostAtOnce = Math.max(mostAtOnce, READS_AT_ONCE - free)
}

export function releaseRead (): void {
  const next = queued.shift()
  if (next !== undefined) next()
  else free++
}

/** Path → when it was handed over; oldest first (a Map keeps insertion order). */
const handedOver = new Map<string, number>()
/** Reads waiting to hand over, the newest woken first: the walk goes deep before wide, fewer directories half done. */
const roomWaiters: Array<{ wake: () => void }> = []

function handedOverNow (): number {
  const expired = Date.now() - HANDED_OVER_FOR_MS
  for (const [path, at] of handedOver) {
    if (at > expired) break
    handedOver.delete(path)
  }
  return handedOver.size
}

/** Waits until a directory may be handed over to chokidar, then counts it as handed over. */
export async function handOver (path: string): Promise<void> {
  while (handedOverNow() >= HANDED_OVER_AT_ONCE) {
    const waiter = { wake: () => {} }
    const ac = new AbortController()
    const woken = new Promise<void>(resolve => { waiter.wake = resolve })
    roomWaiters.push(waiter)
    // The oldest handed over expires by then at the latest.
    await Promise.race([woken, delay(HANDED_OVER_FOR_MS, undefined, { signal: ac.signal }).catch(() => {})])
    ac.abort()
    const at = roomWaiters.indexOf(waiter)
    if (at >= 0) roomWaiters.splice(at, 1)
  }
  handedOver.delete(path)
  handedOver.set(path, Date.now())
}

/** A directory's read has listed it: it no longer counts as handed over. */
export function listed (path: string): void {
  if (!handedOver.delete(path)) return
  roomWaiters.pop()?.wake()
}
