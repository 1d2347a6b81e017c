import { z } from 'zod'

/**
 * The service's answers as production sends them, parsed defensively: fields that have varied
 * across versions are optional, strings that carry numbers are accepted as either.
 */

const numberish = z.union([z.number(), z.string().regex(/^\d+$/).transform(Number)])

export const fileRecordSchema = z.object({
  id: z.string(),
  cid: z.string(),
  fileName: z.string().default(''),
  mimeType: z.string().default(''),
  fileSizeInBytes: numberish.default(0),
  publicKey: z.string().default(''),
  sentForDeal: z.string().optional(),
  status: z.string().optional(),
  txHash: z.string().optional(),
  encryption: z.boolean().default(false),
  createdAt: z.number().optional(),
  lastUpdate: z.number().optional()
})
export type FileRecord = z.output<typeof fileRecordSchema>

export const filesPageSchema = z.object({ fileList: z.array(fileRecordSchema), totalFiles: numberish })

export const dealSchema = z.object({
  pieceCID: z.string().optional(),
  payloadCid: z.string().optional(),
  dealId: numberish.optional(),
  DealID: numberish.optional(),
  storageProvider: z.string().optional(),
  miner: z.string().optional(),
  Provider: z.string().optional(),
  dealStatus: z.string().optional(),
  startEpoch: numberish.optional(),
  endEpoch: numberish.optional(),
  lastUpdate: numberish.optional()
}).loose()

export const ipnsKeySchema = z.object({ ipnsName: z.string().regex(/^[0-9a-f]{32}$/i), ipnsId: z.string().min(1) })
export const publishSchema = z.object({ Name: z.string(), Value: z.string() })
export const ipnsRecordSchema = z.object({ ipnsName: z.string(), ipnsId: z.string(), publicKey: z.string().default(''), cid: z.string().default(''), lastUpdate: numberish.optional() })
export const removeKeySchema = z.object({ Keys: z.array(z.object({ Name: z.string(), Id: z.string() })) })

export const pointerSchema = z.object({
  userId: z.string().optional(),
  pointerKey: z.string().optional(),
  snapshotCid: z.string().min(1),
  engine: z.string().default(''),
  namespace: z.string(),
  network: z.string(),
  memories: z.number().optional(),
  updatedAt: z.string().optional()
})
export type Pointer = z.output<typeof pointerSchema>

export const uploadAnswerSchema = z.object({ Name: z.string().default(''), Hash: z.string(), Size: numberish.optional() })
