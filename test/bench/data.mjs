import { createCipheriv } from 'node:crypto'
import { openSync, writeSync, closeSync, readFileSync } from 'node:fs'

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
