import { rm } from 'node:fs/promises'
import { SnapshotFormatError } from '../errors.js'
import { ENGINE, FORMAT_VERSION, type SealedHeader, type SegmentSpan } from './format.js'
import { INFLATE_BYTES_PER_ENTRY, MAX_INFLATE_BOUND } from './size-bounds.js'
import { seal, unseal, type Sealed } from './sealed-file.js'
import { unsealStream } from './unseal-stream.js'
import type { Readable } from 'node:stream'

/** Every segment may inflate to this much, however small... */
export const MIN_SEGMENT_INFLATE_BOUND = 4 * 1024 * 1024
/**
 * ...or this many times its compressed size, when its rows allow as much: each row carries a CID
 * or a path that brotli cannot squeeze a thousandfold, so a segment of a few KiB that inflates to
 * gigabytes is a bomb whatever row count its header claims.
 */
export const SEGMENT_INFLATE_RATIO = 1024

/**
 * ...and always this many times its compressed size: rows and content records hold CIDs, which
 * brotli cannot squeeze this far. A segment written before its header counted its records (a
 * repack's moves: thousands of records beside a few rows) still opens.
 */
export const SEGMENT_RECORDS_RATIO = 16

/** How many bytes a segment may inflate to: sized by its rows and records, and by its compressed size. */
export function segmentInflateBound (header: SealedHeader, compressedBytes: number): number {
  const rows = counted('entries' in header ? header.entries : 0) + counted('records' in header ? header.records : 0)
  const byRows = Math.min(rows * INFLATE_BYTES_PER_ENTRY, compressedBytes * SEGMENT_INFLATE_RATIO)
  return Math.min(MAX_INFLATE_BOUND, Math.max(MIN_SEGMENT_INFLATE_BOUND, byRows, compressedBytes * SEGMENT_RECORDS_RATIO))
}

function counted (announced: number | undefined): number {
  return announced !== undefined && Number.isSafeInteger(announced) && announced > 0 ? announced : 0
}

export interface SealSegmentInit {
  /** The segment database (`SegmentStore.writeSegment`). */
  readonly database: string
  readonly path: string
  readonly range: SegmentSpan
  readonly entries: number
  /** Content records the database holds beside its rows (counted in the header, for the reader's inflate bound). */
  readonly records?: number
  readonly encryption: 'aes-256-gcm' | 'none'
  readonly stateDir: string
  readonly passphrase?: string
  readonly signal?: AbortSignal
}

/** Seals a segment database: brotli, AES-256-GCM, its device, range and row count in the authenticated header. */
export async function sealSegment (init: SealSegmentInit): Promise<Sealed> {
  return await seal({
    path: init.path,
    header: {
      format: FORMAT_VERSION, engine: ENGINE, kind: 'segment', compression: 'br', device: init.range.deviceId, from: init.range.from, to: init.range.to, entries: init.entries,
      ...(init.records !== undefined && init.records > 0 ? { records: init.records } : {})
    },
    body: { file: init.database },
    encryption: init.encryption,
    stateDir: init.stateDir,
    passphrase: init.passphrase,
    signal: init.signal
  })
}

export interface OpenSegmentInit {
  readonly path: string
  /** Where the checked database goes. */
  readonly destination: string
  /** What the manifest says the segment is; the header and the rows must agree. */
  readonly expected: SegmentSpan & { readonly entries: number }
  /** Checks the database holds exactly those rows (the index room's `checkSegment`); throws (or rejects) if not. */
  readonly check: (database: string) => void | Promise<void>
  /** Names it in errors: its CID. */
  readonly name: string
  readonly stateDir: string
  readonly passphrase?: string
  readonly acceptUnencrypted?: boolean
  readonly signal?: AbortSignal
}

/** The header must say what the manifest says: a segment, of that device, range and count. */
function expecting ({ expected, name }: Pick<OpenSegmentInit, 'expected' | 'name'>): (header: SealedHeader) => void {
  return (header) => {
    if (!('kind' in header) || header.kind !== 'segment') throw new SnapshotFormatError(`${name} is not a ${ENGINE} segment`)
    if (header.device !== expected.deviceId || header.from !== expected.from || header.to !== expected.to || header.entries !== expected.entries) {
      throw new SnapshotFormatError(`segment ${name} says it holds ${header.entries} rows of ${header.device} in ${header.from}..${header.to}; its manifest says ${expected.entries} of ${expected.deviceId} in ${expected.from}..${expected.to}`)
    }
  }
}

/**
 * Opens a sealed segment: the header must say what the manifest says (device, range, count),
 * the tag must verify, and the database must hold exactly those rows (`init.check`).
 */
export async function openSegment (init: OpenSegmentInit): Promise<void> {
  try {
    await unseal({ ...init, expect: expecting(init), inflateBound: segmentInflateBound })
    await init.check(init.destination)
  } catch (err) {
    await rm(init.destination, { force: true })
    throw err
  }
}

export interface UnsealSegmentInit extends Omit<OpenSegmentInit, 'path' | 'check'> {
  /** The sealed bytes as a fetch receives them, before they are verified against their CID. */
  readonly source: Readable
  /** Its size as the manifest says. */
  readonly bytes: number
  /** The database is sent to the disk as it is inflated: the caller fsyncs it (a restore's base). */
  readonly writeBack?: boolean
}

/**
 * The first half of {@link openSegment} over bytes as they arrive: the header must say what the
 * manifest says and the tag must verify; the database is left in `destination` (removed on
 * failure) for the caller to check once the fetch verified the bytes' CID.
 */
export async function unsealSegment (init: UnsealSegmentInit): Promise<void> {
  try {
    await unsealStream({ ...init, expect: expecting(init), inflateBound: segmentInflateBound })
  } catch (err) {
    await rm(init.destination, { force: true })
    throw err
  }
}
