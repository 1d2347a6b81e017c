import { close, fdatasync, open, write } from 'node:fs'
import { Writable } from 'node:stream'

/** Bytes written between two of the stream's own syncs. */
export const WRITE_BACK_BYTES = 16 * 1024 * 1024

export interface WriteBackInit {
  readonly mode?: number
  readonly highWaterMark?: number
  /** Bytes after which the file's data is sent to the disk (one sync at a time). */
  readonly everyBytes?: number
}

/**
 * A new file written as a stream whose bytes are sent to the disk while it is written: after
 * each `everyBytes` an `fdatasync` starts in the background (one at a time; the writes do not wait
 * on it). Linux starts writing a file's dirty pages back only after 30 s or gigabytes, so without
 * this the fsync that makes a large file durable at the end waits for all of it; with it, the disk
 * works while the producer does (a restore's inflate) and that fsync finds little left. It is no
 * promise of durability itself: the caller still fsyncs when it must. A failed sync fails the stream.
 */
export function createWriteBackStream (path: string, init: WriteBackInit = {}): Writable {
  const everyBytes = init.everyBytes ?? WRITE_BACK_BYTES
  let fd: number | undefined
  let sinceSync = 0
  let syncing: Promise<void> | undefined
  let syncFailure: Error | undefined
  const startSync = (): void => {
    if (syncing !== undefined || fd === undefined) return
    sinceSync = 0
    const at = fd
    syncing = new Promise<void>(resolve => {
      fdatasync(at, (err) => {
        if (err !== null) syncFailure ??= err
        syncing = undefined
        resolve()
      })
    })
  }
  // The write on its way, if any: the file is closed only once it is back, so that a late write
  // never lands in whatever file reused the descriptor (fs.WriteStream waits the same way).
  let writing: Promise<void> | undefined
  const writeAll = (at: number, chunk: Buffer, callback: (err?: Error | null) => void, from = 0): void => {
    write(at, chunk, from, chunk.byteLength - from, null, (err, written) => {
      if (err !== null) { callback(err); return }
      if (from + written < chunk.byteLength) { writeAll(at, chunk, callback, from + written); return }
      sinceSync += chunk.byteLength
      if (sinceSync >= everyBytes) startSync()
      callback(syncFailure)
    })
  }
  const settled = async (): Promise<void> => { await Promise.all([writing, syncing]) }
  return new Writable({
    highWaterMark: init.highWaterMark,
    construct (callback) {
      open(path, 'w', init.mode ?? 0o666, (err, opened) => {
        if (err === null) fd = opened
        callback(err)
      })
    },
    write (chunk: Buffer, _encoding, callback) {
      if (syncFailure !== undefined) { callback(syncFailure); return }
      if (fd === undefined) { callback(new Error('the file was closed')); return }
      const at = fd
      writing = new Promise<void>(resolve => {
        writeAll(at, chunk, (err) => { writing = undefined; resolve(); callback(err) })
      })
    },
    final (callback) {
      // The sync started last is owned here: its failure is the stream's, not a rejection lost.
      void (syncing ?? Promise.resolve()).then(() => { callback(syncFailure) })
    },
    destroy (err, callback) {
      const opened = fd
      fd = undefined
      void settled().then(() => {
        if (opened === undefined) { callback(err); return }
        close(opened, (closeErr) => { callback(err ?? closeErr) })
      })
    }
  })
}
