import { z } from 'zod'
import { cidSchema, isCanonicalCid } from './cid-text.js'

/**
 * The service's answers as production sends them, parsed defensively: fields that have varied
 * across versions are optional, strings that carry numbers are accepted as either, and `null`
 * in an optional field means absent (production sends it for fields a record never had).
 */

const numberish = z.union([z.number(), z.string().regex(/^\d+$/).transform(Number)])

/** Milliseconds since the epoch, from a number, a string of digits or an ISO date. */
const timestamp = z.union([
  z.number(),
  z.string().regex(/^\d+$/).transform(Number),
  z.string().refine(text => !Number.isNaN(Date.parse(text)), 'expected a timestamp').transform(text => Date.parse(text))
])

/** Optional: absent, `null` or `undefined` all read as absent. */
function optional<S extends z.ZodType> (schema: S): z.ZodType<z.output<S> | undefined, z.input<S> | null | undefined> {
  return schema.nullish().transform(value => value ?? undefined) as never
}

/** Optional with a value when absent or `null`. */
function orElse<S extends z.ZodType> (schema: S, fallback: z.output<S>): z.ZodType<z.output<S>, z.input<S> | null | undefined> {
  return schema.nullish().transform(value => value ?? fallback) as never
}

/** A field only shown to the user: a value of a shape never seen before is dropped, not fatal. */
function shown<S extends z.ZodType> (schema: S): z.ZodType<z.output<S> | undefined, unknown> {
  return optional(schema).catch(undefined) as never
}

export const fileRecordSchema = z.object({
  id: z.string(),
  /** '' when the service sent something that is not a canonical CID: the listing skips and counts the record. */
  cid: z.string().transform(text => isCanonicalCid(text) ? text : ''),
  fileName: orElse(z.string(), ''),
  mimeType: orElse(z.string(), ''),
  fileSizeInBytes: orElse(numberish, 0),
  publicKey: orElse(z.string(), ''),
  sentForDeal: optional(z.string()),
  status: optional(z.string()),
  txHash: optional(z.string()),
  encryption: orElse(z.boolean(), false),
  createdAt: optional(timestamp),
  lastUpdate: optional(timestamp)
})
export type FileRecord = z.output<typeof fileRecordSchema>

export const filesPageSchema = z.object({ fileList: orElse(z.array(fileRecordSchema), []), totalFiles: numberish })

/**
 * One deal. Production's current names are `DealID`, `Provider`, `chainDealID`, `pieceCID`,
 * `aggregateIn`, `startEpoch`, `endEpoch`; older answers carried `dealId`, `miner`,
 * `storageProvider`, `payloadCid`.
 */
export const dealSchema = z.object({
  DealID: shown(numberish),
  dealId: shown(numberish),
  chainDealID: shown(numberish),
  Provider: shown(z.string()),
  storageProvider: shown(z.string()),
  miner: shown(z.string()),
  pieceCID: shown(z.string()),
  payloadCid: shown(z.string()),
  aggregateIn: shown(z.string()),
  dealStatus: shown(z.string()),
  startEpoch: shown(numberish),
  endEpoch: shown(numberish),
  lastUpdate: shown(timestamp)
}).loose()

/** `deal_status`: a bare array, or one under `dealInfo` (`null` there: no deal yet). */
export const dealStatusSchema = z.union([
  z.array(dealSchema),
  z.object({ dealInfo: orElse(z.array(dealSchema), []) }).loose().transform(answer => answer.dealInfo)
])

export const ipnsKeySchema = z.object({ ipnsName: z.string().regex(/^[0-9a-f]{32}$/i), ipnsId: z.string().regex(/^[A-Za-z0-9]{1,256}$/, 'expected an IPNS name') })
export const publishSchema = z.object({ Name: z.string(), Value: z.string() })
export const ipnsRecordSchema = z.object({ ipnsName: z.string(), ipnsId: z.string(), publicKey: orElse(z.string(), ''), cid: orElse(z.string(), '').transform(text => isCanonicalCid(text) ? text : ''), lastUpdate: optional(timestamp) })
export const removeKeySchema = z.object({ Keys: z.array(z.object({ Name: z.string(), Id: z.string() })) })

export const pointerSchema = z.object({
  userId: optional(z.string()),
  pointerKey: optional(z.string()),
  /** Parsed here: a pointer that names `bafy…/../x` never reaches a URL or a file name. */
  snapshotCid: cidSchema,
  engine: orElse(z.string(), ''),
  namespace: z.string(),
  network: z.string(),
  memories: optional(numberish),
  updatedAt: optional(z.string())
})
export type Pointer = z.output<typeof pointerSchema>
/** The pointer service's answer to a read of one pointer. */
export const pointerAnswerSchema = z.object({ pointer: pointerSchema })

export const uploadAnswerSchema = z.object({ Name: z.string().default(''), Hash: z.string(), Size: numberish.optional() })
