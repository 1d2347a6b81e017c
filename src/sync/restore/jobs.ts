import { availableParallelism } from 'node:os'
import type { CidProfile } from '../../content/index.js'
import { MAX_OBJECT_BYTES, type ContentRecord, type FileAttrs } from '../../custody/index.js'
import type { Entry } from '../../index/index.js'
import { restoresOwners } from './attrs.js'
import { testKnob } from '../../util/test-knob.js'

/** A file to fetch, checked and its directory made. */
export interface Job {
  readonly at: number
  readonly row: Entry
  readonly record: ContentRecord
  readonly profile: CidProfile
  readonly root: string
  readonly target: string
  readonly targetDir: string
  readonly key: Buffer | undefined
  /** Its objects streamed from the embedded service's store, verified block by block, not held in memory. */
  readonly streamed: boolean
  /** Streamed by range: its bytes alone read from its pack, whose other files this run does not want. */
  readonly byRange?: boolean
  /** A different file was there when checked, to be replaced (`--overwrite`); else one that appears meanwhile is kept. */
  readonly replace: boolean
  /** Its mode and owner, given once it is in place. */
  readonly attrs: FileAttrs
}

/** Whether a file there has the mode (and, as root, the owner) a restore would give it; a mode unknown is not compared. */
export function sameAttrs (there: { mode: number, uid: number, gid: number }, attrs: FileAttrs, unknown: boolean): boolean {
  if (unknown) return true
  if ((there.mode & 0o7777) !== (attrs.mode & 0o7777)) return false
  return !restoresOwners() || ((attrs.uid === undefined || attrs.uid === there.uid) && (attrs.gid === undefined || attrs.gid === there.gid))
}

/**
 * Whether right bytes there may be given their recorded mode and owner in place: only where no one
 * but their owner (or root) could have written other bytes into them since they were hashed, and
 * their owner stays. Else the file is fetched again, onto an inode of its own: another user's file,
 * or one others may write, is never handed root's owner or a setuid bit with bytes no one checked.
 * A mode unknown is not set (only the mtime is).
 */
export function fixableInPlace (there: { mode: number, uid: number, gid: number }, attrs: FileAttrs, unknown: boolean): boolean {
  if (unknown) return true
  if ((there.mode & 0o022) !== 0) return false
  return (attrs.uid === undefined || attrs.uid === there.uid) && (attrs.gid === undefined || attrs.gid === there.gid)
}

/** The object a job's file is read from with other files (a pack held in memory); undefined for a file read on its own. */
export function packOf (job: Job): string | undefined {
  return job.record.sealing === 'none' || job.streamed || job.record.objects.length !== 1 ? undefined : job.record.objects[0]?.[0]
}

/**
 * Large files (several objects, or streamed) first, then files read from one shared object grouped by it and
 * in its order, then plain ones: a pack's readers come one after another, so it is fetched once
 * and dropped once they are done, and no file that waits for memory holds any (ObjectMemory).
 */
export function fetchOrder (jobs: readonly Job[]): Job[] {
  const kind = (job: Job): number => job.record.sealing === 'none' ? 2 : packOf(job) === undefined ? 0 : 1
  return [...jobs].sort((a, b) => {
    const byKind = kind(a) - kind(b)
    if (byKind !== 0 || kind(a) !== 1) return byKind !== 0 ? byKind : a.at - b.at
    const [objectA, offsetA] = a.record.objects[0] as readonly [string, number, number]
    const [objectB, offsetB] = b.record.objects[0] as readonly [string, number, number]
    return objectA < objectB ? -1 : objectA > objectB ? 1 : offsetA - offsetB || a.at - b.at
  })
}

/** Bytes of large files from which a restore opens files on every core ({@link restoreThreads}). */
export const EVERY_CORE_LARGE_BYTES = 64 * 1024 * 1024

/**
 * Sealing threads a restore opens files in. One a core but one (at most 4), as storing does: the
 * main thread reads the objects and checks the small files' places. Large files leave it little to
 * do, since their leaves are read and not hashed. So a run with {@link EVERY_CORE_LARGE_BYTES} of
 * them opens files on every core. For small files alone, a second thread on two cores cost more
 * CPU than it took on (docs/benchmarks.md, "Restoring: a sealed blob hashed once").
 */
export function restoreThreads (largeBytes: number): number {
  const cores = availableParallelism()
  return Math.max(1, Math.min(4, largeBytes >= EVERY_CORE_LARGE_BYTES ? cores : cores - 1))
}

/** The sealing threads of a run of small files, and of `verify --content` (see {@link restoreThreads}). */
export const RESTORE_THREADS = restoreThreads(0)

/**
 * Verified objects a restore holds in memory at once: a whole part, or a few packs (the slabs of
 * one let go serve the next). The scratch files this replaces cost a write and a read of every
 * byte; memory costs this much of the process's peak (about 180 MB before, 300 MB since). With
 * the embedded service, large files stream and only packs are held (peak 215-240 MB).
 */
export const RESTORE_MEMORY_BYTES = MAX_OBJECT_BYTES

/**
 * Verified files fsynced together, then renamed: up to this many files or bytes a batch. A kill
 * loses at most the batches held (`HELD_BATCHES`: the one syncing, those filling), fetched again by
 * the next run; their descriptors stay open in the sealing thread until then.
 */
export const RESTORE_BATCH = { files: 64, bytes: 32 * 1024 * 1024 }

/**
 * A pack this run wants at most this many files of is read by range, file by file: only their
 * blocks, not the whole pack (a `get` of one small file).
 */
export const RANGE_READERS = 8

/** `jobs` with the files of packs they want few files of marked to be read by range, where the store can. */
export function byRangeWhereFew (jobs: readonly Job[], canStream: boolean): Job[] {
  if (!canStream) return [...jobs]
  const readers = new Map<string, number>()
  for (const job of jobs) {
    const pack = packOf(job)
    if (pack !== undefined) readers.set(pack, (readers.get(pack) ?? 0) + 1)
  }
  return jobs.map((job) => {
    const pack = packOf(job)
    return pack !== undefined && (readers.get(pack) ?? 0) <= RANGE_READERS ? { ...job, streamed: true, byRange: true } : job
  })
}

/**
 * Files of one pack sent to a sealing thread in one message and answered in one, instead of a
 * message each way a file. Small enough that every thread still has files to open.
 */
export const RESTORE_PACK_BATCH = 16

/**
 * Files a restore brings back at a time, in the order of their packs. What it holds for each file
 * to fetch (its job, its target) is held for one window, not for the whole tree. Large enough that
 * every thread has files to open, and that few packs are split across two windows.
 */
export const RESTORE_WINDOW = testKnob('CIDSYNC_TEST_RESTORE_WINDOW', 8192)

/** Files restored at once: while one waits on its fetch or its fsync, others are hashed and written (restic's restorer works the same way). */
export const RESTORE_CONCURRENCY = 8

/**
 * Large files streamed at once, of those: one a sealing thread. Each more holds its stream's slots.
 * Two a thread were a little faster, and took a restore past 300 MB at its peak (docs/benchmarks.md,
 * "A restore's memory"). A restore streams one a thread of its own pool.
 */
export const STREAMED_AT_ONCE = RESTORE_THREADS

