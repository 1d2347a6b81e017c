import { open, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { FileChangedWhileHashingError } from '../content/index.js'
import { InternalError } from '../errors.js'
import type { CidProfile, ObjectBlocks } from '../content/index.js'
import { contentMasterKey, fileKey } from './content-key.js'
import { PACK_MAX_BLOBS, PACK_MAX_BYTES, PART_CHUNKS, SMALL_FILE_BYTES } from './layout.js'
import type { ContentRecord, Sealing } from './record.js'
import type { FileToStore } from './file-to-store.js'
import { SealPool } from './seal-pool.js'
import { makeDirs } from '../util/make-dirs.js'
import type { ProgressEvent } from '../util/progress.js'

/** What storing needs from outside: the upload endpoint. */
export interface ContentStorerComponents {
  /**
   * Sends an object file under the snapshots' profile; answers its CID. `expectedCid`: the CID
   * its bytes were hashed to as they were sealed, so the sender need not hash them again (the
   * service's answer must still equal it). `name`: what the uploads listing shows for it, which
   * says what it is (a pack of small files, a part of a large one) and nothing of the files.
   */
  readonly storeObject: (path: string, options: { signal?: AbortSignal, expectedCid?: string, name: string, blocks?: ObjectBlocks }) => Promise<string>
  /** Sends a file as it is under its own profile; answers the CID the service gave it. */
  readonly storePlain: (path: string, profile: CidProfile, options: { signal?: AbortSignal }) => Promise<string>
}

/** Plaintext bytes stored, told once the files' records were handed out. */
export type ContentStorerProgress = ProgressEvent<'custody:stored', { readonly files: number, readonly bytes: number }>

/** The key content is sealed under: the snapshot key, with its id and salt to name it in records. */
export interface ContentSealingKey {
  readonly key: Uint8Array
  readonly keyId: string
  readonly salt: string
}

export interface ContentStorerInit {
  readonly sealing: Sealing
  /** Required unless `sealing` is "none". */
  readonly key?: ContentSealingKey
  /** A directory of this device's state for object files on their way out (made 0700). */
  readonly spoolDir: string
  /** Told of every record once its objects are stored: the caller writes them to the index. */
  readonly onStored: (records: ContentRecord[]) => void | Promise<void>
  /** Parts of a large file stored by an earlier run, so a resumed file sends only the rest. */
  readonly storedParts?: (file: FileToStore) => ReadonlyMap<number, string>
  /** Told of each part as it is stored, to be handed back through `storedParts` after a kill. */
  readonly onPartStored?: (file: FileToStore, index: number, object: string) => void
  /** Told of plaintext bytes as they are stored, for progress and rates. */
  readonly onProgress?: (event: ContentStorerProgress) => void
  /** Threads that read and seal files at once (default 2). */
  readonly sealThreads?: number
}

interface PackedBlob { readonly file: FileToStore, readonly blob: Buffer }

/**
 * Stores files' content (docs/content-format.md): small files gathered into packs, large ones in
 * parts, each object sent once it is whole, and a record handed out for every file whose objects
 * are all stored. Files hand in the order they come; {@link flush} sends what a pack holds.
 */
export class ContentStorer {
  private readonly master: Buffer | undefined
  private pack: PackedBlob[] = []
  private packBytes = 0
  private readonly packed = new Set<string>()
  private spoolReady: Promise<void> | undefined
  private readonly sealer: SealPool

  constructor (private readonly components: ContentStorerComponents, private readonly init: ContentStorerInit) {
    if (init.sealing !== 'none' && init.key === undefined) throw new RangeError('sealed content needs a key')
    this.master = init.key === undefined ? undefined : contentMasterKey(init.key.key)
    this.sealer = new SealPool(Math.max(1, init.sealThreads ?? 2))
  }

  /** Ends the sealing threads; what a pack holds and was not flushed is not sent. */
  async close (): Promise<void> {
    await this.sealer.close()
  }

  /** Whether a file of `size` bytes goes into a pack (no upload of its own) rather than being sent alone. */
  packs (size: number): boolean {
    return this.init.sealing !== 'none' && size < SMALL_FILE_BYTES
  }

  /** Files waiting in the pack being filled. */
  get pendingFiles (): number {
    return this.pack.length
  }

  /**
   * Stores one file, or adds it to the pack being filled. Throws
   * `FileChangedWhileHashingError` when the file no longer holds its row's content: nothing of it
   * is recorded, and its next row will be stored instead.
   */
  async add (file: FileToStore, options: { signal?: AbortSignal } = {}): Promise<void> {
    await this.ensureSpool()
    if (this.init.sealing === 'none') return await this.addPlain(file, options)
    const key = fileKey(this.master as Buffer, file.cid)
    if (this.packs(file.size)) {
      if (this.packed.has(file.cid.toString())) return
      const blob = await this.sealer.sealSmall(file, key, options.signal)
      // Another add may have packed the same content meanwhile, or filled the pack (files are stored several at once).
      if (this.packed.has(file.cid.toString())) return
      for (let flushes = 0; flushes < 8 && (this.pack.length >= PACK_MAX_BLOBS || this.packBytes + blob.byteLength > PACK_MAX_BYTES); flushes++) await this.flush(options)
      if (this.packed.has(file.cid.toString())) return
      this.pack.push({ file, blob })
      this.packBytes += blob.byteLength
      this.packed.add(file.cid.toString())
      return
    }
    const parts = await this.sealer.sealParts(file, {
      key,
      spoolDir: this.init.spoolDir,
      partChunks: PART_CHUNKS,
      storedParts: this.init.storedParts?.(file) ?? new Map(),
      storePart: async (index, path, _bytes, expectedCid, blocks) => {
        const object = await this.components.storeObject(path, { ...options, expectedCid, blocks, name: `cidsync-part-${index + 1}.sealed` })
        this.init.onPartStored?.(file, index, object)
        return object
      },
      signal: options.signal
    })
    await this.init.onStored([{ ...this.recordBase(file), objects: parts.map(([object, length]) => [object, 0, length] as const) }])
    this.init.onProgress?.({ type: 'custody:stored', detail: { files: 1, bytes: file.size } })
  }

  /** Sends the pack being filled, if any, and hands out its records. */
  async flush (options: { signal?: AbortSignal } = {}): Promise<void> {
    if (this.pack.length === 0) return
    // Taken at once: adds running meanwhile fill the next pack, not this one.
    const pack = this.pack
    this.pack = []
    this.packBytes = 0
    this.packed.clear()
    let object: string
    try {
      await this.ensureSpool()
      const path = join(this.init.spoolDir, `pack-${randomBytes(8).toString('hex')}.tmp`)
      try {
        // The blobs as they are, one write of them all: no pack-sized copy in memory.
        const handle = await open(path, 'wx', 0o600)
        try {
          await writeAll(handle, pack.map(p => p.blob))
        } finally {
          await handle.close()
        }
        object = await this.components.storeObject(path, { ...options, name: 'cidsync-pack.sealed' })
      } finally {
        await rm(path, { force: true })
      }
    } catch (err) {
      // Not sent: its files go back in front, for the next flush to send.
      this.pack = [...pack, ...this.pack]
      this.packBytes = this.pack.reduce((sum, p) => sum + p.blob.byteLength, 0)
      for (const p of pack) this.packed.add(p.file.cid.toString())
      throw err
    }
    let offset = 0
    const records = pack.map(({ file, blob }) => {
      const record: ContentRecord = { ...this.recordBase(file), objects: [[object, offset, blob.byteLength]] }
      offset += blob.byteLength
      return record
    })
    await this.init.onStored(records)
    this.init.onProgress?.({ type: 'custody:stored', detail: { files: records.length, bytes: pack.reduce((sum, p) => sum + p.file.size, 0) } })
  }

  private async addPlain (file: FileToStore, options: { signal?: AbortSignal }): Promise<void> {
    const got = await this.components.storePlain(file.path, file.profile, options)
    if (got !== file.cid.toString()) throw new FileChangedWhileHashingError(`${file.path} was stored as ${got}, not its indexed ${file.cid.toString()}: it changed since it was indexed`)
    await this.init.onStored([{ ...this.recordBase(file), objects: [[got, 0, file.size]] }])
    this.init.onProgress?.({ type: 'custody:stored', detail: { files: 1, bytes: file.size } })
  }

  private recordBase (file: FileToStore): Omit<ContentRecord, 'objects'> {
    return {
      cid: file.cid.toString(),
      size: file.size,
      sealing: this.init.sealing,
      keyId: this.init.sealing === 'none' ? '' : (this.init.key as ContentSealingKey).keyId,
      keySalt: this.init.sealing === 'none' ? '' : (this.init.key as ContentSealingKey).salt
    }
  }

  private async ensureSpool (): Promise<void> {
    this.spoolReady ??= makeDirs(this.init.spoolDir, 0o700).then(() => {})
    await this.spoolReady
  }
}

/** Writes every buffer, in order, however few bytes each `writev` takes (at most 1,024 buffers a call: IOV_MAX). */
async function writeAll (handle: Awaited<ReturnType<typeof open>>, buffers: readonly Buffer[]): Promise<void> {
  const list = buffers.filter(b => b.byteLength > 0)
  let at = 0
  let offset = 0
  while (at < list.length) {
    let { bytesWritten } = await handle.writev([(list[at] as Buffer).subarray(offset), ...list.slice(at + 1, at + 1024)])
    if (bytesWritten === 0) throw new InternalError('writing a pack to the spool made no progress')
    while (at < list.length && bytesWritten > 0) {
      const left = (list[at] as Buffer).byteLength - offset
      if (bytesWritten >= left) { bytesWritten -= left; at++; offset = 0 } else { offset += bytesWritten; bytesWritten = 0 }
    }
  }
}
