import { createCipheriv } from 'node:crypto'
import { openSync, writeSync, closeSync, readFileSync, readdirSync } from 'node:fs'

const BLOCK = 8 * 1024 * 1024

/** Writes `bytes` of ChaCha20 keystream (incompressible, reproducible) to `path`, 8 MiB at a time. */
export function writeStreamFile (path, bytes, keyByte = 1) {
  const cipher = createCipheriv('chacha20', Buffer.alloc(32, keyByte), Buffer.alloc(16))
  const zeros = Buffer.alloc(BLOCK)
  const fd = openSync(path, 'w')
  try {
    for (let written = 0; written < bytes; written += BLOCK) writeSync(fd, cipher.update(zeros.subarray(0, Math.min(BLOCK, bytes - written))))
  } finally {
    closeSync(fd)
  }
}

/** A process's resident set size in bytes, from /proc. */
export function rssOf (pid) {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find(l => l.startsWith('VmRSS:'))
  return Number(line?.split(/\s+/)[1] ?? 0) * 1024
}

/** A process's current and peak resident set (VmRSS, VmHWM) in bytes, from /proc. */
export function memOf (pid) {
  const lines = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n')
  const kib = (key) => Number(lines.find(l => l.startsWith(key))?.split(/\s+/)[1] ?? 0) * 1024
  return { rss: kib('VmRSS:'), hwm: kib('VmHWM:') }
}

/** {@link memOf} summed over a process and its descendants (syncthing runs as a monitor and its child). */
export function treeMemOf (pid) {
  const own = memOf(pid)
  // Each thread lists the children it forked (Go forks from any of them).
  const children = []
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      children.push(...readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number))
    } catch {}
  }
  for (const child of children) {
    const sub = treeMemOf(child)
    own.rss += sub.rss
    own.hwm += sub.hwm
  }
  return own
}

/**
 * What the watcher records of each bench file (schema 7+): a regular file, its mode and owner. A
 * row without it is one from before cidsync recorded kinds, which takes older, slower paths.
 */
export const BENCH_META = { kind: 'file', mode: 0o644, uid: 1000, gid: 1000, owner: 'bench', group: 'bench', target: null, linkGroup: null }

/** Entry `i` of the benchmark index (the snapshot and sync benches): a photo library's shape. */
export function benchEntry (i) {
  return { kind: 'upsert', folder: 'photos', path: `${2000 + (i % 25)}/${String(i % 1000).padStart(3, '0')}/IMG_${i}.jpg`, size: 1_000_000 + i, mtimeMs: 1_700_000_000_000 + i * 1.5, cid: `bafkreih${(i * 2654435761 % 2 ** 32).toString(36).padStart(52, 'q')}`, cidProfile: 'kubo-cidv1', meta: BENCH_META }
}

/**
 * Fills an open index with entries 0..count-1 of `device` straight in SQL (one transaction, the
 * rows as `entries.apply` writes them: sequence i + 1, with what each file is), and sets the
 * device's sequence.
 */
export function fillIndex (index, device, count, hostname = 'bench') {
  index.entries.registerDevice(device, hostname)
  const insert = index.db.prepare('INSERT INTO entries (device_id, folder, path, size, mtime_ms, cid, cid_profile, updated_at, deleted, seq, kind, mode, uid, gid, owner, grp, target, link_group) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?)')
  const now = Date.now()
  const m = BENCH_META
  // In key order (appends to the b-tree instead of inserts all over a 190 MB one), with a large cache meanwhile.
  const order = Array.from({ length: count }, (_, i) => `${benchEntry(i).path}\0${i}`).sort().map(k => Number(k.slice(k.indexOf('\0') + 1)))
  const cache = index.db.pragma('cache_size', { simple: true })
  index.db.pragma('cache_size = -262144')
  index.db.transaction(() => {
    for (const i of order) {
      const e = benchEntry(i)
      insert.run(device, e.folder, e.path, e.size, e.mtimeMs, e.cid, e.cidProfile, now, i + 1, m.kind, m.mode, m.uid, m.gid, m.owner, m.group, m.target, m.linkGroup)
    }
    index.db.prepare('UPDATE devices SET last_seq = ? WHERE device_id = ?').run(count, device)
  })()
  index.db.pragma(`cache_size = ${cache}`)
  // Rows written in SQL: the live counts (schema 5+) counted once, as a migration would.
  index.entries.recountLive?.()
  index.db.pragma('wal_checkpoint(TRUNCATE)')
}
