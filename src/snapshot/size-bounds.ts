import { SnapshotFormatError } from '../errors.js'
import { decodeHeader, PREFIX_BYTES } from './format.js'
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
