import { createReadStream } from 'node:fs'
import { open, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import type { CID } from 'multiformats/cid'
import { CidBuilder, FileChangedWhileHashingError, cidProfile, type CidProfile } from '../content/index.js'
import { sealStream } from './seal-stream.js'
import { PART_CHUNKS } from './layout.js'

/** A file of the index to store: where it is and what its row says it holds. */
export interface FileToStore {
  /** Absolute path on this device. */
  readonly path: string
  readonly cid: CID
  readonly size: number
  /** The profile its CID was computed with (the folder's). */
  readonly profile: CidProfile
}

const READ_BYTES = 1024 * 1024
/** Objects are stored under the snapshots' profile (docs/content-format.md, "Objects"). */
const OBJECT_PROFILE = cidProfile('kubo-cidv1')

function checkSameFile (file: FileToStore, builder: CidBuilder): void {
  const read = builder.finish().toString()
  const indexed = file.cid.toString()
  if (read !== indexed) throw new FileChangedWhileHashingError(`${file.path} holds ${read} now, not its indexed ${indexed}: it changed since it was indexed`)
}

/**
 * Seals a small file whole into memory, hashing the very bytes it seals: answers the blob only
 * when they hash to the row's CID, so a file that changed is never stored under its old row.
 */
export async function sealSmallFile (file: FileToStore, key: Uint8Array, signal?: AbortSignal): Promise<Buffer> {
  const builder = new CidBuilder(file.profile)
  const parts: Buffer[] = []
  const source = createReadStream(file.path, { highWaterMark: READ_BYTES, signal })
  for await (const chunk of sealStream(source, { key, cid: file.cid, size: file.size, onPlain: b => builder.update(b) })) parts.push(chunk.bytes)
  checkSameFile(file, builder)
  return Buffer.concat(parts)
}

export interface SealPartsInit {
  readonly key: Uint8Array
  /** Where part files are written before they are sent (the state dir's spool). */
  readonly spoolDir: string
  /**
   * Parts already stored by an earlier, interrupted run: sealed again and sent only when they do
   * not hash to the object stored (that run read other bytes: the file was changing then).
   */
  readonly storedParts: ReadonlyMap<number, string>
  /** Sends one part file and answers its object CID; the file is removed after. */
  readonly storePart: (index: number, path: string, bytes: number) => Promise<string>
  readonly signal?: AbortSignal
}

/**
 * Seals a large file into parts of {@link PART_CHUNKS} chunks, storing each as it is made, so
 * memory stays at one chunk and a kill loses at most the part being sent. Answers each part's
 * object CID and byte length, in order, once the bytes read hash to the row's CID.
 */
export async function sealFileInParts (file: FileToStore, init: SealPartsInit): Promise<Array<readonly [string, number]>> {
  const builder = new CidBuilder(file.profile)
  const parts: Array<readonly [string, number]> = []
  const source = createReadStream(file.path, { highWaterMark: READ_BYTES, signal: init.signal })
  let partIndex = 0
  let handle: Awaited<ReturnType<typeof open>> | undefined
  let spool = ''
  let bytes = 0
  // A part an earlier run stored is kept only if these bytes make that very object: a part sent
  // while the file was changing holds other bytes, and reusing it would record a file that never
  // comes back right (each part is a whole object, so its CID is computed here as the service does).
  let partCid: CidBuilder | undefined
  const finishPart = async (): Promise<void> => {
    const stored = init.storedParts.get(partIndex)
    if (handle !== undefined) {
      await handle.close()
      handle = undefined
      try {
        const same = stored !== undefined && partCid?.finish().toString() === stored
        parts.push([same ? stored : await init.storePart(partIndex, spool, bytes), bytes])
      } finally {
        await rm(spool, { force: true })
      }
    }
    partCid = undefined
    partIndex++
    bytes = 0
  }
  try {
    for await (const chunk of sealStream(source, { key: init.key, cid: file.cid, size: file.size, onPlain: b => builder.update(b) })) {
      if (bytes === 0) {
        spool = join(init.spoolDir, `part-${randomBytes(8).toString('hex')}.tmp`)
        handle = await open(spool, 'wx', 0o600)
        if (init.storedParts.has(partIndex)) partCid = new CidBuilder(OBJECT_PROFILE)
      }
      partCid?.update(chunk.bytes)
      if (handle !== undefined) await handle.write(chunk.bytes)
      bytes += chunk.bytes.byteLength
      // A part is sent only when the bytes so far hash right would need the whole file: instead
      // the whole file is checked at the end, and a changed file's parts stay unreferenced.
      if ((chunk.index + 1) % PART_CHUNKS === 0 || chunk.last) await finishPart()
    }
  } finally {
    if (handle !== undefined) {
      await handle.close()
      await rm(spool, { force: true })
    }
  }
  checkSameFile(file, builder)
  return parts
}
