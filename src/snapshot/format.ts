import { z } from 'zod'
import { SnapshotFormatError } from '../errors.js'

/**
 * A sealed file (docs/snapshot-format.md): `MAGIC`, a 2-byte big-endian header length, the header
 * (JSON), then the body: compressed, and encrypted with AES-256-GCM (its 16-byte tag last) unless
 * the cipher is `none`. Magic, length and header are the cipher's associated data, so changing any
 * of them fails authentication. Engine `/1` seals one copy of the index; `/2` seals segments and
 * manifests.
 */
export const MAGIC = Buffer.from('CIDSNAP\u0000', 'latin1')
export const ENGINE_V1 = 'cidsync-sqlite/1'
export const ENGINE = 'cidsync-sqlite/2'
/** The engines this cidsync reads; it writes only {@link ENGINE}. */
export const READABLE_ENGINES: readonly string[] = [ENGINE_V1, ENGINE]
export const FORMAT_VERSION = 2
export const TAG_BYTES = 16
export const MAX_HEADER_BYTES = 4096
/** Where a sealed file's header ends at the latest. */
export const PREFIX_BYTES = MAGIC.byteLength + 2 + MAX_HEADER_BYTES

const count = z.number().int().nonnegative()
/** Text a header or manifest carries that is shown to the user: terminal escapes are refused, not printed. */
export const NO_CONTROLS = /^[^\u0000-\u001f\u007f-\u009f]*$/
/** A publish's time, as `restore` and `import` print it. */
export const publishTime = z.string().max(64).refine(text => Number.isFinite(Date.parse(text)), 'not a time')
/**
 * Sequence numbers stay far below 2^53 (past it they are no longer exact): a forged file that
 * names one beyond this is refused, so no device ever counts on from it.
 */
export const MAX_SEQUENCE = 2 ** 48
/** The most content records one content index object holds: a writer splits past it. */
export const MAX_CONTENT_INDEX_RECORDS = 5_000
/** The most objects one prune list names: a prune with more dead content deletes the rest next run. */
export const MAX_PRUNE_LIST_OBJECTS = 200_000
const sealing = {
  cipher: z.enum(['aes-256-gcm', 'none']),
  /** base64 of the 12-byte GCM nonce; empty with no cipher. */
  nonce: z.string().max(64),
  /** Which key: the first 8 bytes of SHA-256(key), hex; empty with no cipher. */
  keyId: z.string().max(64),
  /** base64 scrypt salt when the key comes from a passphrase; empty otherwise. */
  salt: z.string().max(256)
}

const v1Header = z.object({
  format: z.literal(1),
  engine: z.literal(ENGINE_V1),
  compression: z.literal('gzip'),
  ...sealing,
  // No cipher authenticates an unencrypted one: its time and device are printed, so both are checked.
  createdAt: publishTime,
  device: z.string().max(128).regex(NO_CONTROLS, 'control characters'),
  entries: count
})

const segmentHeader = z.object({
  format: z.literal(2),
  engine: z.literal(ENGINE),
  kind: z.literal('segment'),
  compression: z.literal('br'),
  ...sealing,
  device: z.string().min(1).max(128).regex(NO_CONTROLS, 'control characters'),
  from: count.max(MAX_SEQUENCE),
  to: count.max(MAX_SEQUENCE),
  entries: count,
  /** Content records the segment carries beside its rows; absent when none (and in segments written before it). */
  records: count.optional()
})

const manifestHeader = z.object({
  format: z.literal(2),
  engine: z.literal(ENGINE),
  kind: z.literal('manifest'),
  compression: z.literal('br'),
  ...sealing
})

/**
 * A content index object (docs/content-format.md, "Content index"): one device's content records,
 * so other devices with the key know what is stored without a publish. Its own kind: it is never
 * taken for a segment or a manifest, and an older cidsync refuses it rather than misread it.
 */
const contentIndexHeader = z.object({
  format: z.literal(2),
  engine: z.literal(ENGINE),
  kind: z.literal('content-index'),
  compression: z.literal('br'),
  ...sealing,
  device: z.string().min(1).max(128).regex(NO_CONTROLS, 'control characters'),
  records: count.max(MAX_CONTENT_INDEX_RECORDS)
})

/**
 * A prune's list of the content objects it is about to delete (docs/retention.md, "Prune and a
 * publish at once"): a publish that names one of them stores it again. Its own kind, like the
 * content index: never taken for a segment or a manifest.
 */
const pruneListHeader = z.object({
  format: z.literal(2),
  engine: z.literal(ENGINE),
  kind: z.literal('prune-list'),
  compression: z.literal('br'),
  ...sealing,
  device: z.string().min(1).max(128).regex(NO_CONTROLS, 'control characters'),
  objects: count.max(MAX_PRUNE_LIST_OBJECTS)
})

export type SnapshotHeader = z.infer<typeof v1Header>
export type SegmentHeader = z.infer<typeof segmentHeader>
export type ManifestHeader = z.infer<typeof manifestHeader>
export type ContentIndexHeader = z.infer<typeof contentIndexHeader>
export type PruneListHeader = z.infer<typeof pruneListHeader>
export type SealedHeader = SnapshotHeader | SegmentHeader | ManifestHeader | ContentIndexHeader | PruneListHeader
/** What a writer says of a sealed file: the rest (cipher, nonce, key id, salt) is filled in when it is sealed. */
export type UnsealedHeader = DistributiveOmit<SealedHeader, keyof typeof sealing>
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never

/** Every header this cidsync reads; made once (building a zod union costs more than parsing with it, and a restore reads tens of headers). */
const anyHeader = z.union([v1Header, segmentHeader, manifestHeader, contentIndexHeader, pruneListHeader]).superRefine((header, ctx) => {
  // A forged header must fail here, coded, never inside the cipher with a raw error.
  if (header.cipher === 'aes-256-gcm' && !/^[A-Za-z0-9+/]{16}$/.test(header.nonce)) ctx.addIssue({ code: 'custom', path: ['nonce'], message: 'expected the base64 of a 12-byte nonce' })
  if (header.cipher === 'aes-256-gcm' && !/^[0-9a-f]{16}$/.test(header.keyId)) ctx.addIssue({ code: 'custom', path: ['keyId'], message: 'expected 16 hex digits' })
  if (header.salt !== '' && !/^[A-Za-z0-9+/]+={0,2}$/.test(header.salt)) ctx.addIssue({ code: 'custom', path: ['salt'], message: 'expected base64' })
})

/** The bytes before the body: magic, length, header. */
export function encodeHeader (header: SealedHeader): Buffer {
  const json = Buffer.from(JSON.stringify(header))
  if (json.byteLength > MAX_HEADER_BYTES) throw new SnapshotFormatError(`a sealed file's header would be ${json.byteLength} bytes, more than ${MAX_HEADER_BYTES}`)
  const length = Buffer.alloc(2)
  length.writeUInt16BE(json.byteLength)
  return Buffer.concat([MAGIC, length, json])
}

/** Parses the prefix of a sealed file; answers the header and where the body starts. */
export function decodeHeader (prefix: Buffer): { header: SealedHeader, bodyOffset: number, headerBytes: Buffer } {
  if (prefix.byteLength < MAGIC.byteLength + 2 || !prefix.subarray(0, MAGIC.byteLength).equals(MAGIC)) {
    throw new SnapshotFormatError('not a cidsync snapshot (wrong magic): the CID may point at something else, or the file is damaged')
  }
  const length = prefix.readUInt16BE(MAGIC.byteLength)
  const end = MAGIC.byteLength + 2 + length
  if (length > MAX_HEADER_BYTES || prefix.byteLength < end) throw new SnapshotFormatError('the snapshot header is cut short or too long: the file is damaged')
  let json: unknown
  try {
    json = JSON.parse(prefix.subarray(MAGIC.byteLength + 2, end).toString('utf8'))
  } catch {
    throw new SnapshotFormatError('the snapshot header is not readable: the file is damaged')
  }
  const { format, engine } = (typeof json === 'object' && json !== null ? json : {}) as { format?: unknown, engine?: unknown }
  if (format !== 1 && format !== FORMAT_VERSION) {
    throw new SnapshotFormatError(`snapshot format version ${String(format)} is not one this cidsync reads (it reads 1 and ${FORMAT_VERSION}): upgrade cidsync`)
  }
  if (typeof engine !== 'string' || !READABLE_ENGINES.includes(engine)) {
    throw new SnapshotFormatError(`the snapshot was made by engine ${String(engine)}, not one of ${READABLE_ENGINES.join(', ')}: cidsync cannot read it (upgrade cidsync)`)
  }
  const parsed = anyHeader.safeParse(json)
  if (!parsed.success) {
    throw new SnapshotFormatError(`the snapshot header does not say what cidsync expects (${parsed.error.issues.slice(0, 3).map(i => `${i.path.join('.') || 'header'}: ${i.message}`).join('; ')}): upgrade cidsync, or the file is damaged`)
  }
  return { header: parsed.data, bodyOffset: end, headerBytes: prefix.subarray(0, end) }
}

/** Which rows of one device a segment holds: a base (its rows at `to`) or a delta (every row written in `(from, to]`). */
export interface SegmentSpan {
  readonly deviceId: string
  readonly kind: 'base' | 'delta'
  readonly from: number
  readonly to: number
}
