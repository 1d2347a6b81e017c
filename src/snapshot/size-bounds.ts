import { SnapshotFormatError } from '../errors.js'
import { decodeHeader, PREFIX_BYTES, type SealedHeader } from './format.js'
import { MAX_MANIFEST_BYTES } from './manifest.js'

/**
 * The most a sealed manifest may weigh on the wire: its body inflates to at most
 * {@link MAX_MANIFEST_BYTES}, and compressed JSON is never larger than that plus the header, the
 * tag and brotli's few bytes of framing.
 */
export const MAX_SEALED_MANIFEST_BYTES = MAX_MANIFEST_BYTES + 64 * 1024

/** How many leading bytes {@link publishFetchBound} reads: the longest a sealed header can be. */
export const PUBLISH_PREFIX_BYTES = PREFIX_BYTES

/**
 * The most a publish (a manifest, or a whole `/1` snapshot) may weigh, read from its first
 * {@link PUBLISH_PREFIX_BYTES}: a manifest is held to {@link MAX_SEALED_MANIFEST_BYTES}; a `/1`
 * snapshot to the fetch's own maximum (undefined). Bytes that are no sealed file, or a segment,
 * throw a {@link SnapshotFormatError}: nothing past their prefix is worth fetching.
 */
export function publishFetchBound (prefix: Buffer): number | undefined {
  const { header } = decodeHeader(prefix)
  if (!('kind' in header)) return undefined
  if (header.kind === 'manifest') return MAX_SEALED_MANIFEST_BYTES
  throw new SnapshotFormatError(`a ${header.engine} ${header.kind}, not a publish (a manifest or a /1 snapshot)`)
}

const MIB = 1024 * 1024
/** Every body may inflate to this much... */
export const MIN_INFLATE_BOUND = 64 * MIB
/** ...or this much per entry its header counts (an index row is a few hundred bytes)... */
export const INFLATE_BYTES_PER_ENTRY = 4096
/** ...or this many times its compressed size (tombstones the header does not count compress well)... */
export const INFLATE_RATIO = 64
/** ...and never more than this, whatever its header says. */
export const MAX_INFLATE_BOUND = 8 * 1024 * MIB

/** How many bytes a body may inflate to before it is refused as a decompression bomb. */
export function inflateBound (header: SealedHeader, compressedBytes: number): number {
  const announced = 'entries' in header ? header.entries : 0
  const entries = Number.isSafeInteger(announced) && announced > 0 ? announced : 0
  return Math.min(MAX_INFLATE_BOUND, Math.max(MIN_INFLATE_BOUND, entries * INFLATE_BYTES_PER_ENTRY, compressedBytes * INFLATE_RATIO))
}
