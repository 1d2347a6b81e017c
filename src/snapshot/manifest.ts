import { readFile, rm } from 'node:fs/promises'
import { z } from 'zod'
import { SnapshotFormatError } from '../errors.js'
import { cidSchema } from '../remote/index.js'
import { ENGINE, FORMAT_VERSION, MAX_SEQUENCE, NO_CONTROLS, publishTime, type SealedHeader } from './format.js'
import { seal, unseal, type Sealed } from './sealed-file.js'

/** The most a manifest's body may inflate to: 10,000 devices of 10,000 segments stay far below it. */
export const MAX_MANIFEST_BYTES = 16 * 1024 * 1024
const MAX_DEVICES = 10_000
const MAX_SEGMENTS = 10_000
/** Chains a forget replaced that a manifest remembers for a prune; the oldest are dropped past it. */
export const MAX_REPLACED = 64
/** Labels one publish may carry (`cidsync snapshot --keep`), and the longest one. */
export const MAX_MARKS = 8
export const MAX_MARK_LENGTH = 200

const count = z.number().int().nonnegative()
const sequence = count.max(MAX_SEQUENCE)
/** Every CID a manifest names is parsed as one: it is joined into URLs and file names. */
const cidText = cidSchema

/** Controls, and the bidi and line-breaking characters that would make a shown label lie about its text. */
const UNSHOWABLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/u

/** A user's label on a publish: printed by `history` and `forget`, so nothing that moves the text. */
export const markSchema = z.string().min(1, 'empty').max(MAX_MARK_LENGTH, `longer than ${MAX_MARK_LENGTH} characters`)
  .refine(mark => !UNSHOWABLE.test(mark), 'control or bidi characters')
  .refine(mark => mark.trim() === mark, 'spaces at either end')
const marksSchema = z.array(markSchema).min(1, 'none given').max(MAX_MARKS, `more than ${MAX_MARKS}`).refine(marks => new Set(marks).size === marks.length, 'a label twice')

export const segmentRefSchema = z.object({
  cid: cidText,
  kind: z.enum(['base', 'delta']),
  from: sequence,
  to: sequence,
  entries: count,
  bytes: count
})

export const deviceChainSchema = z.object({
  deviceId: z.string().min(1).max(128).regex(NO_CONTROLS, 'control characters'),
  hostname: z.string().max(512),
  firstSeen: count,
  lastSeq: sequence,
  segments: z.array(segmentRefSchema).min(1).max(MAX_SEGMENTS)
})

export const manifestSchema = z.object({
  version: z.literal(FORMAT_VERSION),
  createdAt: publishTime,
  // Shown by `restore` and `history`: terminal escapes refused, not printed.
  device: z.string().min(1).max(128).regex(NO_CONTROLS, 'control characters'),
  hostname: z.string().max(512),
  previous: cidText.nullable(),
  entries: count,
  devices: z.array(deviceChainSchema).max(MAX_DEVICES),
  added: z.array(cidText).max(MAX_DEVICES * 2),
  bytesAdded: count,
  /**
   * What the publish was made for, authenticated with the rest of the body. Absent only in
   * manifests written before cidsync bound them (docs/snapshot-format.md, "Namespace binding").
   */
  namespace: z.string().min(1).max(256).regex(NO_CONTROLS, 'control characters').optional(),
  network: z.string().min(1).max(256).regex(NO_CONTROLS, 'control characters').optional(),
  /**
   * The heads of the chains forgets replaced, and when (docs/retention.md, "Prune"): a prune keeps
   * each one whole within its margin, and deletes what it alone needs after. Only in a forget's head.
   */
  replaced: z.array(z.object({ cid: cidText, at: publishTime })).max(MAX_REPLACED).optional(),
  /** The CID the publish had when it was made, before a forget linked it anew: its device still knows it by that one. */
  publishedAs: cidText.optional(),
  /** A user's labels: a forget always keeps a marked publish (docs/retention.md, "Marks"). */
  marks: marksSchema.optional()
}).refine(m => (m.namespace === undefined) === (m.network === undefined), { message: 'names a namespace without a network, or the reverse', path: ['namespace'] })

/**
 * Why a list of labels cannot go on a publish (too many, one twice, one too long or holding
 * control or bidi characters), or undefined when it can: asked where labels come in.
 */
export function marksProblem (marks: readonly string[]): string | undefined {
  const parsed = marksSchema.safeParse(marks)
  if (parsed.success) return undefined
  const issue = parsed.error.issues[0]
  const which = typeof issue?.path[0] === 'number' ? `label ${JSON.stringify(marks[issue.path[0]])}` : 'the labels'
  return `${which}: ${issue?.message ?? 'not a label'} (at most ${MAX_MARKS} labels of 1 to ${MAX_MARK_LENGTH} characters, no control or bidi characters, no spaces at either end)`
}

/** One segment as a manifest lists it. */
export type SegmentRef = z.infer<typeof segmentRefSchema>
/** The segments that rebuild one device's rows, in order. */
export type DeviceChain = z.infer<typeof deviceChainSchema>
/** A publish (docs/snapshot-format.md): who, when, on top of what, and every device's segments. */
export type Manifest = z.infer<typeof manifestSchema>

/** Throws unless every device's list is a base followed by contiguous deltas ending at its `lastSeq`. */
export function checkChains (manifest: Manifest, name: string): void {
  const seen = new Set<string>()
  for (const device of manifest.devices) {
    if (seen.has(device.deviceId)) throw new SnapshotFormatError(`manifest ${name} lists device ${device.deviceId} twice`)
    seen.add(device.deviceId)
    let at = 0
    device.segments.forEach((segment, i) => {
      const wanted = i === 0 ? 'base' : 'delta'
      if (segment.kind !== wanted || segment.from !== at || segment.to < segment.from) {
        throw new SnapshotFormatError(`manifest ${name}: device ${device.deviceId}'s segment ${i + 1} (${segment.kind} ${segment.from}..${segment.to}) does not follow on from ${at}`)
      }
      at = segment.to
    })
    if (at !== device.lastSeq) throw new SnapshotFormatError(`manifest ${name}: device ${device.deviceId}'s segments end at ${at}, not at its sequence ${device.lastSeq}`)
  }
}

export interface SealManifestInit {
  readonly path: string
  readonly manifest: Manifest
  readonly encryption: 'aes-256-gcm' | 'none'
  readonly stateDir: string
  readonly passphrase?: string
  readonly signal?: AbortSignal
}

/** Seals a manifest: its JSON body, brotli, AES-256-GCM, under a header that names nothing else. */
export async function sealManifest (init: SealManifestInit): Promise<Sealed> {
  // What no reader would take is never published: checked as a reader checks it.
  parseManifest(JSON.stringify(init.manifest), init.path)
  return await seal({
    path: init.path,
    header: { format: FORMAT_VERSION, engine: ENGINE, kind: 'manifest', compression: 'br' },
    body: { bytes: Buffer.from(JSON.stringify(init.manifest)) },
    encryption: init.encryption,
    stateDir: init.stateDir,
    passphrase: init.passphrase,
    signal: init.signal
  })
}

export interface OpenManifestInit {
  readonly path: string
  /** Names it in errors: its CID. */
  readonly name: string
  readonly stateDir: string
  readonly passphrase?: string
  readonly acceptUnencrypted?: boolean
  readonly signal?: AbortSignal
}

function expectManifest (header: SealedHeader): void {
  if (!('kind' in header) || header.kind !== 'manifest') {
    throw new SnapshotFormatError(`expected a ${ENGINE} manifest, found a ${header.engine} ${'kind' in header ? header.kind : 'snapshot'}`)
  }
}

/** Opens, parses and checks a sealed manifest. */
export async function openManifest (init: OpenManifestInit): Promise<Manifest> {
  const body = `${init.path}.json`
  try {
    await unseal({ ...init, destination: body, expect: expectManifest, inflateBound: () => MAX_MANIFEST_BYTES })
    return parseManifest(await readFile(body, 'utf8'), init.name)
  } finally {
    await rm(body, { force: true })
  }
}

/** Parses a manifest's JSON (from a sealed file or the local cache) and checks its chains. */
export function parseManifest (json: string, name: string): Manifest {
  let value: unknown
  try {
    value = JSON.parse(json)
  } catch {
    throw new SnapshotFormatError(`manifest ${name} is not JSON: the file is damaged`)
  }
  const parsed = manifestSchema.safeParse(value)
  if (!parsed.success) {
    throw new SnapshotFormatError(`manifest ${name} does not say what cidsync expects (${parsed.error.issues.slice(0, 3).map(i => `${i.path.join('.') || 'manifest'}: ${i.message}`).join('; ')}): upgrade cidsync, or it is damaged`)
  }
  checkChains(parsed.data, name)
  return parsed.data
}
