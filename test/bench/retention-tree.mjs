// The retention bench's trees, their churn, and its timed runs of other processes.
import { spawn } from 'node:child_process'
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createCipheriv } from 'node:crypto'
import { join } from 'node:path'

/** The tree at scale 1: 1,000,000 entries holding 10 GiB, so 10,737 bytes a file on average. */
export const MEAN_FILE = Math.round(10 * 2 ** 30 / 1_000_000)
const MIN_FILE = 4096

/** A reproducible generator: the same scale makes the same tree and the same churn. */
export function generator (seed) {
  let state = seed
  return (n) => { state = (state * 1103515245 + 12345) % 2 ** 31; return state % n }
}

/** Incompressible bytes, different for each (file, version). */
function bytesOf (size, file, version) {
  const iv = Buffer.alloc(16)
  iv.writeUInt32LE(file, 4)
  iv.writeUInt32LE(version, 8)
  return createCipheriv('chacha20', Buffer.alloc(32, 7), iv).update(Buffer.alloc(size))
}

/**
 * A tree of files of 4 KiB to about 17 KiB (10,737 bytes on average), 100 to a directory. It
 * writes each version and answers which paths changed, so a publish and a backup see the same.
 */
export class Tree {
  constructor (dir, files, seed = 4242) {
    this.dir = dir
    this.next = generator(seed)
    this.versions = new Map()
    this.count = 0
    this.bytes = 0
    for (let i = 0; i < files; i++) this.write(i)
  }

  pathOf (i) { return `d${String(Math.floor(i / 100)).padStart(5, '0')}/f${i}.bin` }

  /** Writes a new version of file `i`; answers its path. */
  write (i) {
    const version = (this.versions.get(i)?.version ?? -1) + 1
    const size = MIN_FILE + this.next(2 * (MEAN_FILE - MIN_FILE))
    const path = this.pathOf(i)
    if (version === 0) mkdirSync(join(this.dir, path, '..'), { recursive: true })
    writeFileSync(join(this.dir, path), bytesOf(size, i, version))
    this.bytes += size - (this.versions.get(i)?.size ?? 0)
    if (version === 0) this.count = Math.max(this.count, i + 1)
    this.versions.set(i, { version, size })
    return path
  }

  remove (i) {
    const path = this.pathOf(i)
    rmSync(join(this.dir, path), { force: true })
    this.bytes -= this.versions.get(i)?.size ?? 0
    this.versions.delete(i)
    return path
  }

  /**
   * One round of churn: `changed` files rewritten, drawn from the first `hot` files (work in progress
   * is edited again and again), `added` new files and `removed` live ones gone. Answers the paths.
   */
  churn ({ changed, hot, added = 0, removed = 0 }) {
    const paths = new Set()
    for (let k = 0; k < changed; k++) {
      const i = this.next(Math.min(hot, this.count))
      if (this.versions.has(i)) paths.add(this.write(i))
    }
    for (let k = 0; k < added; k++) paths.add(this.write(this.count))
    for (let k = 0; k < removed; k++) {
      const i = hot + this.next(Math.max(1, this.count - hot))
      if (this.versions.has(i)) paths.add(this.remove(i))
    }
    return [...paths]
  }
}

/** Bytes of every file under `dir`. */
export function du (dir) {
  let total = 0
  for (const name of readdirSync(dir, { recursive: true })) {
    const stats = statSync(join(dir, String(name)), { throwIfNoEntry: false })
    if (stats?.isFile() === true) total += stats.size
  }
  return total
}

/** A process's resident set high-water mark and its anonymous part now (bytes), from /proc. */
function residentOf (pid) {
  const lines = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n')
  const kib = (key) => Number(lines.find(l => l.startsWith(key))?.split(/\s+/)[1] ?? 0) * 1024
  return { hwm: kib('VmHWM:'), anon: kib('RssAnon:') }
}

/**
 * Runs a command to its end, its peak resident set read from the kernel's high-water mark
 * (VmHWM, polled: the last poll before the exit holds the peak). `anon` is the largest anonymous
 * part seen: the rest is pages of files mapped (SQLite maps a segment while it checks it), which
 * the kernel can drop. Throws on a failure exit.
 */
export async function timed (command, args, options = {}) {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', d => { stdout += d })
  child.stderr.on('data', d => { stderr += d })
  let peak = 0
  let anon = 0
  const poll = () => {
    try {
      const now = residentOf(child.pid)
      peak = Math.max(peak, now.hwm)
      anon = Math.max(anon, now.anon)
    } catch {}
  }
  const timer = setInterval(poll, 20)
  const started = performance.now()
  const code = await new Promise((resolve, reject) => { child.once('exit', resolve); child.once('error', reject) })
  const ms = performance.now() - started
  clearInterval(timer)
  if (code !== 0) throw new Error(`${command} ${args.join(' ')} exited ${code}: ${stderr.slice(-2000)}`)
  return { ms, peak, anon, stdout, stderr }
}

export const seconds = (ms) => `${(ms / 1000).toFixed(2)} s`
export const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`
export const count = (n) => n.toLocaleString('en-US')
/** The middle value; the mean of the two middle ones for an even count. */
export function median (xs) {
  const sorted = [...xs].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/** Each path's versions, oldest first: the publish that first held it (its time) and its size; 0 once removed. */
export class Versions {
  constructor (dir) {
    this.dir = dir
    this.byPath = new Map()
  }

  note (paths, at) {
    for (const path of paths) {
      const size = statSync(join(this.dir, path), { throwIfNoEntry: false })?.size ?? 0
      if (!this.byPath.has(path)) this.byPath.set(path, [])
      this.byPath.get(path).push({ at, size })
    }
  }

  /** Bytes of the versions that a publish at one of `times` holds, and of those noted at or after `since`. */
  keptBytes (times, since = Infinity) {
    let bytes = 0
    for (const list of this.byPath.values()) {
      const holds = new Set()
      for (const t of times) {
        let j = list.length - 1
        while (j >= 0 && list[j].at > t) j--
        if (j >= 0) holds.add(j)
      }
      for (let j = list.length - 1; j >= 0 && list[j].at >= since; j--) holds.add(j)
      for (const j of holds) bytes += list[j].size
    }
    return bytes
  }

  /** The path with the most versions. */
  busiest () {
    return [...this.byPath.entries()].sort((a, b) => b[1].length - a[1].length)[0][0]
  }
}
