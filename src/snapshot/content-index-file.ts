import { readFile, rm } from 'node:fs/promises'
import { z } from 'zod'
import { SnapshotFormatError } from '../errors.js'
import { ENGINE, FORMAT_VERSION, MAX_CONTENT_INDEX_RECORDS, type ContentIndexHeader, type SealedHeader } from './format.js'
import { seal, unseal, type Sealed } from './sealed-file.js'

/** The version of a content index object's body this cidsync writes and reads. */
export const CONTENT_INDEX_VERSION = 1
/** A writer starts a new object once a body passes this many bytes. */
export const CONTENT_INDEX_SPLIT_BYTES = 4 * 1024 * 1024
/** The most a body may inflate to: a reader refuses more, a writer never makes more. */
export const MAX_CONTENT_INDEX_BYTES = 16 * 1024 * 1024
/** The most a sealed content index object may weigh: compressed JSON never outgrows its body by much. */
export const MAX_SEALED_CONTENT_INDEX_BYTES = MAX_CONTENT_INDEX_BYTES + 64 * 1024

const bodySchema = z.object({
  version: z.literal(CONTENT_INDEX_VERSION),
  device: z.string().min(1).max(128),
  records: z.array(z.unknown()).max(MAX_CONTENT_INDEX_RECORDS)
})

/** A content index object opened: whose records, and the records as written (each parsed by the caller). */
export interface ContentIndexBody {
  readonly device: string
  readonly records: readonly unknown[]
}

interface SealContentIndexPlace {
  readonly path: string
  readonly device: string
  readonly stateDir: string
  readonly passphrase?: string
  readonly signal?: AbortSignal
}

/** Records' JSON texts joined by commas, as UTF-8, and how many they are. */
export interface JoinedRecordTexts {
  readonly bytes: Uint8Array
  readonly count: number
}

/** Where to seal, and the records: each as JSON will write it, each as its JSON text already, or those texts joined. */
export type SealContentIndexInit = SealContentIndexPlace & (
  | { readonly records: readonly unknown[] }
  | { readonly recordTexts: readonly string[] }
  | { readonly joinedTexts: JoinedRecordTexts })

/** Records' JSON texts joined, in a buffer of their own: it may be handed to another thread whole. */
export function joinRecordTexts (texts: readonly string[]): JoinedRecordTexts {
  return { bytes: new TextEncoder().encode(texts.join(',')), count: texts.length }
}

/**
 * Seals a content index object: its JSON body, brotli, AES-256-GCM under the snapshot key, the
 * device and record count in the authenticated header. Always encrypted: without the key nobody
 * can make one a reader takes.
 */
export async function sealContentIndex (init: SealContentIndexInit): Promise<Sealed> {
  const joined = 'joinedTexts' in init ? init.joinedTexts : joinRecordTexts('recordTexts' in init ? init.recordTexts : init.records.map(r => JSON.stringify(r) ?? 'null'))
  if (joined.count > MAX_CONTENT_INDEX_RECORDS) throw new SnapshotFormatError(`a content index object would hold ${joined.count} records, more than ${MAX_CONTENT_INDEX_RECORDS}`)
  // The body JSON.stringify would write of { version, device, records }, joined from the texts.
  const body = Buffer.concat([Buffer.from(`{"version":${CONTENT_INDEX_VERSION},"device":${JSON.stringify(init.device)},"records":[`), joined.bytes, Buffer.from(']}')])
  if (body.byteLength > MAX_CONTENT_INDEX_BYTES) throw new SnapshotFormatError(`a content index object would be ${body.byteLength} bytes, more than ${MAX_CONTENT_INDEX_BYTES}`)
  return await seal({
    path: init.path,
    header: { format: FORMAT_VERSION, engine: ENGINE, kind: 'content-index', compression: 'br', device: init.device, records: joined.count },
    body: { bytes: body },
    encryption: 'aes-256-gcm',
    stateDir: init.stateDir,
    passphrase: init.passphrase,
    signal: init.signal
  })
}

/** Whether a sealed file's header is a content index object's. */
export function isContentIndexHeader (header: SealedHeader): header is ContentIndexHeader {
  return 'kind' in header && header.kind === 'content-index'
}

export interface OpenContentIndexInit {
  readonly path: string
  /** Names it in errors: its CID. */
  readonly name: string
  readonly stateDir: string
  readonly passphrase?: string
  readonly signal?: AbortSignal
}

/**
 * Opens a content index object: the header must be one, encrypted (one without a cipher is
 * refused: anyone could have made it), the tag must verify, and the body must say what the
 * header says (device, record count). What each record holds is the caller's to parse.
 */
export async function openContentIndex (init: OpenContentIndexInit): Promise<ContentIndexBody> {
  const destination = `${init.path}.json`
  let header: SealedHeader
  try {
    header = await unseal({
      ...init,
      destination,
      acceptUnencrypted: false,
      expect: (h) => { if (!isContentIndexHeader(h)) throw new SnapshotFormatError(`${init.name} is a ${h.engine} ${'kind' in h ? h.kind : 'snapshot'}, not a content index object`) },
      inflateBound: () => MAX_CONTENT_INDEX_BYTES
    })
    return parseBody(await readFile(destination, 'utf8'), header as ContentIndexHeader, init.name)
  } finally {
    await rm(destination, { force: true })
  }
}

function parseBody (json: string, header: ContentIndexHeader, name: string): ContentIndexBody {
  let value: unknown
  try {
    value = JSON.parse(json)
  } catch {
    throw new SnapshotFormatError(`content index object ${name} is not JSON: damaged`)
  }
  const parsed = bodySchema.safeParse(value)
  if (!parsed.success) {
    throw new SnapshotFormatError(`content index object ${name} does not say what cidsync expects (${parsed.error.issues.slice(0, 3).map(i => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ')}): upgrade cidsync, or it is damaged`)
  }
  const body = parsed.data
  if (body.device !== header.device || body.records.length !== header.records) {
    throw new SnapshotFormatError(`content index object ${name} says it holds ${header.records} records of ${header.device}; its body holds ${body.records.length} of ${body.device}`)
  }
  return { device: body.device, records: body.records }
}
