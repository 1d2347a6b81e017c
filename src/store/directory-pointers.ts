import { join } from 'node:path'
import { CID } from 'multiformats/cid'
import { DirectoryStoreError, PointerNotFoundError } from '../errors.js'
import { writeFileAtomicSync } from '../util/atomic-write.js'
import type { StoreCallOptions } from './object-store.js'
import type { ObjectHome, PointerRegistry, StoredPointer } from './pointer-registry.js'
import { DirectoryObjectStore, type CreateStore } from './directory-store.js'
import { readSmallFile } from './directory-files.js'

const FILE = 'pointers.json'
/** More pointers than any user keeps: a file past it is not one cidsync wrote. */
const MAX_POINTERS = 1000
const MAX_FILE_BYTES = 1024 * 1024

type Pointers = Record<string, StoredPointer>

const keyOf = (namespace: string, network: string): string => JSON.stringify([namespace, network])

/** One pointer read back, each field checked: the file is outside cidsync's hands between runs. */
function parsePointer (value: unknown): StoredPointer | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  const { snapshotCid, engine, namespace, network, memories } = value as Record<string, unknown>
  if (typeof snapshotCid !== 'string' || typeof engine !== 'string' || typeof namespace !== 'string' || typeof network !== 'string') return undefined
  try {
    if (CID.parse(snapshotCid).toString() !== snapshotCid) return undefined
  } catch {
    return undefined
  }
  if (memories !== undefined && !Number.isSafeInteger(memories)) return undefined
  return { snapshotCid, engine, namespace, network, ...(typeof memories === 'number' ? { memories } : {}) }
}

/**
 * The pointers of a directory store, in `pointers.json` beside its objects: written whole to a
 * temp file, fsynced and renamed over the last (0600). One writer at a time is assumed: the
 * device whose mirror it is. Read back, every pointer is checked; a file that is not one cidsync
 * wrote is a {@link DirectoryStoreError}, never a pointer.
 */
export class DirectoryPointers implements PointerRegistry {
  private readonly path: string
  /** The put writing now; the next waits for it. */
  private writing: Promise<void> = Promise.resolve()

  /** `store`: the objects beside them, opened (its marker checked) before the pointers are read. */
  constructor (private readonly store: DirectoryObjectStore) {
    this.path = join(store.dir, FILE)
  }

  private async read (): Promise<Pointers> {
    await this.store.opened()
    let text: string | undefined
    try {
      // Never more than the bound, and never through a link, a FIFO or a device.
      text = await readSmallFile(this.path, MAX_FILE_BYTES)
    } catch (err) {
      if (err instanceof DirectoryStoreError) throw err
      throw new DirectoryStoreError(`could not read ${this.path}: ${(err as Error).message}`, { cause: err })
    }
    if (text === undefined) {
      // None yet, or the disk is gone: an unmounted disk's pointer is not "nothing".
      await this.store.present()
      return {}
    }
    const damaged = (why: string): DirectoryStoreError => new DirectoryStoreError(`${this.path} is not a pointers file cidsync wrote (${why}): move it aside, and mirror again to write it afresh`)
    let parsed: unknown
    try { parsed = JSON.parse(text) } catch { throw damaged('not JSON') }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw damaged('not an object')
    const entries = Object.entries(parsed)
    if (entries.length > MAX_POINTERS) throw damaged('too many pointers')
    const pointers: Pointers = {}
    for (const [key, value] of entries) {
      const pointer = parsePointer(value)
      if (pointer === undefined || key !== keyOf(pointer.namespace, pointer.network)) throw damaged(`a pointer under ${JSON.stringify(key.slice(0, 100))} is malformed`)
      pointers[key] = pointer
    }
    return pointers
  }

  async current (namespace: string, network: string, options: StoreCallOptions = {}): Promise<StoredPointer> {
    options.signal?.throwIfAborted()
    const found = (await this.read())[keyOf(namespace, network)]
    if (found === undefined) throw new PointerNotFoundError(namespace, network, { asked: `the directory store at ${this.store.dir} holds none` })
    return found
  }

  async put (input: StoredPointer, options: StoreCallOptions = {}): Promise<void> {
    options.signal?.throwIfAborted()
    const pointer = parsePointer(input)
    if (pointer === undefined) throw new DirectoryStoreError(`refused to write a malformed pointer for ${input.namespace}/${input.network}`)
    // One file holds every pointer: puts in turn, so one to another pointer never writes back what it read before this one.
    const turn = this.writing.then(async () => { await this.write(pointer) })
    // The failure is the caller's, awaited below: the next put only waits for this one to end.
    this.writing = turn.catch(() => {})
    await turn
  }

  private async write (pointer: StoredPointer): Promise<void> {
    // The store is still there: an unmounted disk's empty mount point is never written.
    await this.store.present()
    const pointers = await this.read()
    pointers[keyOf(pointer.namespace, pointer.network)] = pointer
    writeFileAtomicSync(this.path, JSON.stringify(pointers, null, 2) + '\n', { mode: 0o600 })
  }
}

/** A directory's objects and pointers together: all a mirror or a restore needs of it. */
export function directoryHome (dir: string, options: { readonly create?: CreateStore } = {}): ObjectHome & { readonly objects: DirectoryObjectStore } {
  const objects = new DirectoryObjectStore(dir, options)
  return { objects, pointers: new DirectoryPointers(objects) }
}
