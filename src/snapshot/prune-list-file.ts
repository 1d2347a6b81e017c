import { readFile, rm } from 'node:fs/promises'
import { z } from 'zod'
import { PruneListNewerError, SnapshotFormatError } from '../errors.js'
import { ENGINE, FORMAT_VERSION, MAX_PRUNE_LIST_OBJECTS, type PruneListHeader, type SealedHeader } from './format.js'
import { seal, unseal, type Sealed } from './sealed-file.js'

/** The version of a prune list's body this cidsync writes and reads. */
export const PRUNE_LIST_VERSION = 1
/** The most a body may inflate to: every CID at its longest, quoted, with a comma. */
export const MAX_PRUNE_LIST_BYTES = MAX_PRUNE_LIST_OBJECTS * 104 + 4096
/** The most a sealed prune list may weigh: compressed JSON never outgrows its body by much. */
export const MAX_SEALED_PRUNE_LIST_BYTES = MAX_PRUNE_LIST_BYTES + 64 * 1024

const CID_TEXT = z.string().min(1).max(100).regex(/^[A-Za-z0-9]+$/, 'not a CID')

const bodySchema = z.object({
  version: z.literal(PRUNE_LIST_VERSION),
  device: z.string().min(1).max(128),
  objects: z.array(CID_TEXT).max(MAX_PRUNE_LIST_OBJECTS)
})

export interface SealPruneListInit {
  readonly path: string
  /** The pruning device. */
  readonly device: string
  /** The content objects the prune is about to delete. */
  readonly objects: readonly string[]
  readonly stateDir: string
  readonly passphrase?: string
  readonly signal?: AbortSignal
}

/**
 * Seals a prune list: its JSON body, brotli, AES-256-GCM under the snapshot key. Always encrypted:
 * its CIDs say what the account is deleting, and only a device with the key may make one.
 */
export async function sealPruneList (init: SealPruneListInit): Promise<Sealed> {
  if (init.objects.length > MAX_PRUNE_LIST_OBJECTS) throw new SnapshotFormatError(`a prune list would name ${init.objects.length} objects, more than ${MAX_PRUNE_LIST_OBJECTS}`)
  const body = Buffer.from(JSON.stringify({ version: PRUNE_LIST_VERSION, device: init.device, objects: init.objects }))
  return await seal({
    path: init.path,
    header: { format: FORMAT_VERSION, engine: ENGINE, kind: 'prune-list', compression: 'br', device: init.device, objects: init.objects.length },
    body: { bytes: body },
    encryption: 'aes-256-gcm',
    stateDir: init.stateDir,
    passphrase: init.passphrase,
    signal: init.signal
  })
}

/** Whether a sealed file's header is a prune list's. */
export function isPruneListHeader (header: SealedHeader): header is PruneListHeader {
  return 'kind' in header && header.kind === 'prune-list'
}

export interface OpenPruneListInit {
  readonly path: string
  /** Names it in errors: its CID. */
  readonly name: string
  readonly stateDir: string
  readonly passphrase?: string
  readonly signal?: AbortSignal
}

/**
 * Opens a prune list: the header must be one, encrypted (one without a cipher is refused), the tag
 * must verify, and the body must say what the header says. Answers the objects it names.
 */
export async function openPruneList (init: OpenPruneListInit): Promise<{ readonly device: string, readonly objects: readonly string[] }> {
  const destination = `${init.path}.json`
  try {
    const header = await unseal({
      ...init,
      destination,
      acceptUnencrypted: false,
      expect: (h) => { if (!isPruneListHeader(h)) throw new SnapshotFormatError(`${init.name} is a ${h.engine} ${'kind' in h ? h.kind : 'snapshot'}, not a prune list`) },
      inflateBound: () => MAX_PRUNE_LIST_BYTES
    }) as PruneListHeader
    let value: unknown
    try {
      value = JSON.parse(await readFile(destination, 'utf8'))
    } catch {
      throw new SnapshotFormatError(`prune list ${init.name} is not JSON: damaged`)
    }
    const version = (typeof value === 'object' && value !== null ? value : {}) as { version?: unknown }
    // Sealed under this key and verified: a newer cidsync made it. Naming nothing would be a guess.
    if (typeof version.version === 'number' && version.version > PRUNE_LIST_VERSION) {
      throw new PruneListNewerError(`prune list ${init.name} is of version ${version.version}, newer than this cidsync reads (${PRUNE_LIST_VERSION}): upgrade cidsync`)
    }
    const parsed = bodySchema.safeParse(value)
    if (!parsed.success) throw new SnapshotFormatError(`prune list ${init.name} does not say what cidsync expects (${parsed.error.issues[0]?.message ?? 'invalid'}): upgrade cidsync, or it is damaged`)
    if (parsed.data.device !== header.device || parsed.data.objects.length !== header.objects) {
      throw new SnapshotFormatError(`prune list ${init.name} says it names ${header.objects} objects of ${header.device}; its body names ${parsed.data.objects.length} of ${parsed.data.device}`)
    }
    return { device: parsed.data.device, objects: parsed.data.objects }
  } finally {
    await rm(destination, { force: true })
  }
}
