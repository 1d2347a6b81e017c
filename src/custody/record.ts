import { CID } from 'multiformats/cid'
import { z } from 'zod'
import { ContentIntegrityError } from '../errors.js'
import { chunkCount, sealedSize } from './chunks.js'

/** The sealings a record may name (docs/content-format.md). */
export const SEALINGS = ['aes-256-gcm/1', 'none'] as const
export type Sealing = (typeof SEALINGS)[number]

/** Largest file a record may describe: far past any disk, well inside a safe integer. */
const MAX_FILE_BYTES = 2 ** 50
/** The most objects one file spans: 2^50 bytes in 64 MiB parts. */
const MAX_OBJECTS = 2 ** 24

/**
 * Texts already found canonical (a pure property of the text). The files of a pack each name it,
 * so a restore of many small files would parse the same few CIDs once a file. Bounded: cleared when
 * full.
 */
const knownCanonical = new Set<string>()
const KNOWN_CANONICAL_MAX = 4096

/** Whether `text` is a CID exactly as parsing it prints it back: nothing else may name an object. */
function canonicalText (text: string): boolean {
  if (knownCanonical.has(text)) return true
  try {
    if (CID.parse(text).toString() !== text) return false
  } catch {
    return false
  }
  if (knownCanonical.size >= KNOWN_CANONICAL_MAX) knownCanonical.clear()
  knownCanonical.add(text)
  return true
}

const canonicalCid = z.string().min(1).max(256).refine(canonicalText, 'not a CID')

const offset = z.number().int().nonnegative().max(MAX_FILE_BYTES * 2)

const objectSpanSchema = z.tuple([canonicalCid, offset, offset])

/** The rule a record must pass; {@link parseContentRecord} checks it by hand first, never more loosely. */
export const contentRecordSchema = z.object({
  cid: canonicalCid,
  size: z.number().int().nonnegative().max(MAX_FILE_BYTES),
  sealing: z.enum(SEALINGS),
  keyId: z.string().regex(/^(|[0-9a-f]{16})$/),
  keySalt: z.string().max(64).regex(/^[A-Za-z0-9+/=]*$/),
  objects: z.array(objectSpanSchema).min(1).max(MAX_OBJECTS)
})

const KEY_ID = /^(|[0-9a-f]{16})$/
const KEY_SALT = /^[A-Za-z0-9+/=]*$/
const isCanonical = (text: unknown): text is string => typeof text === 'string' && text.length >= 1 && text.length <= 256 && canonicalText(text)
const isOffset = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 && n <= MAX_FILE_BYTES * 2

/**
 * The record `value` as the schema would answer it, checked by hand: a restore parses one a file,
 * and the schema's parse cost more than the file's write. Undefined when anything is off; the
 * schema then decides and names what. It takes nothing the schema refuses.
 */
function wellFormed (value: unknown): ContentRecord | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined
  const { cid, size, sealing, keyId, keySalt, objects } = value as Record<string, unknown>
  if (!isCanonical(cid) || typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0 || size > MAX_FILE_BYTES) return undefined
  if ((sealing !== 'aes-256-gcm/1' && sealing !== 'none') || typeof keyId !== 'string' || !KEY_ID.test(keyId)) return undefined
  if (typeof keySalt !== 'string' || keySalt.length > 64 || !KEY_SALT.test(keySalt)) return undefined
  if (!Array.isArray(objects) || objects.length < 1 || objects.length > MAX_OBJECTS) return undefined
  const spans: Array<readonly [string, number, number]> = []
  for (const span of objects as unknown[]) {
    if (!Array.isArray(span) || span.length !== 3) return undefined
    const [object, offset, length] = span as unknown[]
    if (!isCanonical(object) || !isOffset(offset) || !isOffset(length)) return undefined
    spans.push([object, offset, length])
  }
  return { cid, size, sealing, keyId, keySalt, objects: spans }
}

/** Where one stored file's content lies, and how it is sealed. */
export interface ContentRecord {
  /** The file's CID, as its index row holds it. */
  readonly cid: string
  readonly size: number
  readonly sealing: Sealing
  /** The snapshot key's id the content is sealed under ("" when plain). */
  readonly keyId: string
  /** Its scrypt salt when the key comes from a passphrase, else "". */
  readonly keySalt: string
  /** In order: each object's CID, and the range of it that holds this file's bytes. */
  readonly objects: ReadonlyArray<readonly [object: string, offset: number, length: number]>
}

/**
 * Parses a record from anywhere outside this process (a segment, another device, the service):
 * every CID canonical, every range a whole number, the ranges adding up to what the file seals
 * to. A record that fails is refused with {@link ContentIntegrityError}, never partly used.
 */
export function parseContentRecord (value: unknown): ContentRecord {
  let record = wellFormed(value)
  if (record === undefined) {
    // The schema says what is wrong (and is the rule: what it takes, a record is).
    const parsed = contentRecordSchema.safeParse(value)
    if (!parsed.success) {
      throw new ContentIntegrityError(`a content record does not say what cidsync expects (${parsed.error.issues.slice(0, 3).map(i => `${i.path.join('.') || 'record'}: ${i.message}`).join('; ')}): it is damaged or forged`)
    }
    record = parsed.data
  }
  const stored = record.sealing === 'none' ? record.size : sealedSize(record.size)
  const spanned = record.objects.reduce((sum, [, , length]) => sum + length, 0)
  if (spanned !== stored) throw new ContentIntegrityError(`the content record of ${record.cid} spans ${spanned} bytes, not the ${stored} its file stores as: damaged or forged`)
  if (record.sealing === 'none' && (record.objects.length !== 1 || record.objects[0]?.[0] !== record.cid || record.objects[0]?.[1] !== 0)) {
    throw new ContentIntegrityError(`the plain content record of ${record.cid} names another object than the file itself: forged`)
  }
  if (record.sealing !== 'none' && record.keyId === '') throw new ContentIntegrityError(`the sealed content record of ${record.cid} names no key`)
  // Every part holds whole chunks, at least one: more parts than chunks is no layout cidsync
  // writes, and each part costs a read of its own (thousands of tiny ones stall a restore).
  if (record.objects.length > chunkCount(record.size)) throw new ContentIntegrityError(`the content record of ${record.cid} splits its ${chunkCount(record.size)} chunks into ${record.objects.length} parts: forged`)
  return record
}

/**
 * The object CIDs a record's `objects` JSON names (`[[cid, offset, length], ...]`), for marking
 * what to keep: nothing is read through them, so a part that does not parse is only left out.
 * None when the JSON does not read; where the record is used it is refused.
 */
export function objectCidsOf (json: string): string[] {
  try {
    const parts: unknown = JSON.parse(json)
    return Array.isArray(parts) ? parts.flatMap(part => Array.isArray(part) && typeof part[0] === 'string' ? [part[0]] : []) : []
  } catch {
    return []
  }
}
