import { CID } from 'multiformats/cid'
import { ContentIntegrityError } from '../errors.js'
import { MAX_OBJECT_BYTES } from './layout.js'

/** Fetches an object's bytes into slabs `slab` gives, verified against its CID; the caller names the most bytes it accepts. */
export type FetchObjectBytes = (cid: string, options: { signal?: AbortSignal, maxBytes: number, slab: () => Uint8Array }) => Promise<Uint8Array[]>

/** The slabs objects are held in: every one the same size, so a slab let go serves any later object. */
export const SLAB_BYTES = 4 * 1024 * 1024

/** An object's verified bytes: slabs, each full but the last. */
export class HeldObject {
  readonly byteLength: number

  constructor (readonly slabs: readonly Uint8Array[]) {
    this.byteLength = slabs.reduce((sum, s) => sum + s.byteLength, 0)
  }

  /** The bytes `offset` to `offset + length` as views of the slabs, in order (no copy). */
  range (offset: number, length: number): Uint8Array[] {
    const views: Uint8Array[] = []
    let start = 0
    for (const slab of this.slabs) {
      const end = start + slab.byteLength
      if (end > offset && start < offset + length) views.push(slab.subarray(Math.max(0, offset - start), Math.min(slab.byteLength, offset + length - start)))
      start = end
    }
    return views
  }
}

interface Shared {
  bytes: Promise<HeldObject>
  readers: number
  reserved: number
  held?: HeldObject
  /** No reader gave up while a thread may still read it: its slabs may be reused. */
  reusable: boolean
  /** A reader asked for it (else it was fetched ahead of its readers). */
  asked: boolean
}

/** Only canonical CIDs are fetched: nothing else from a record names an object. */
export function checkedCid (cid: string): string {
  let parsed: string
  try {
    parsed = CID.parse(cid).toString()
  } catch {
    throw new ContentIntegrityError(`a content record names ${JSON.stringify(cid.slice(0, 80))} as an object: not a CID`)
  }
  if (parsed !== cid) throw new ContentIntegrityError(`a content record names ${JSON.stringify(cid.slice(0, 80))} as an object: not a CID as cidsync writes one`)
  return cid
}

const isCanonicalCid = (cid: string): boolean => {
  try {
    return checkedCid(cid) === cid
  } catch {
    return false
  }
}

const slabsFor = (bytes: number): number => Math.max(1, Math.ceil(bytes / SLAB_BYTES))

/**
 * The objects a restore holds in memory, verified, within a budget of slabs: nothing goes to a
 * scratch file and back. A pack is fetched once for every file read from it (their number
 * announced with {@link expect}) and dropped after the last; a large file's parts are each its
 * own ({@link own}), dropped once read. A fetch waits, first come first served, until the budget
 * has room for what it expects; one larger than the whole budget goes alone.
 *
 * No wait can wedge as a restore uses it (get-files.ts): a part is dropped once its thread has
 * read it, whatever else waits, and a pack's readers come one after another, so once its first
 * reader runs, the others follow as files end, before any reader of a later pack.
 *
 * Slabs are shared memory (the sealing threads read them where they lie) and reused: one let go
 * is freed only once both threads' collectors run, and a new buffer for every object grew a
 * restore's memory far past its budget.
 */
export class ObjectMemory {
  private readonly shared = new Map<string, Shared>()
  /** Readers announced of objects not yet fetched, and the bytes they read up to: in the order they will be read. */
  private readonly expected = new Map<string, { readers: number, bytes: number }>()
  private readonly queue: Array<{ readonly slabs: number, readonly go: () => void }> = []
  private readonly spare: Uint8Array[] = []
  /** Slabs reserved or held. */
  private used = 0
  private readonly budget: number

  constructor (budgetBytes: number, private readonly fetchObject: FetchObjectBytes) {
    this.budget = slabsFor(budgetBytes)
  }

  /** Bytes of slabs reserved or held now. */
  get held (): number {
    return this.used * SLAB_BYTES
  }

  /**
   * `readers` more files will read `cid` through {@link get}, up to byte `bytes`: it is kept until
   * each has released it. Announced in the order they will be read: once an object's bytes are
   * in, the next one announced is fetched ahead, so its first reader finds it there.
   */
  expect (cid: string, readers = 1, bytes = 0): void {
    const known = this.expected.get(cid)
    this.expected.set(cid, { readers: (known?.readers ?? 0) + readers, bytes: Math.max(known?.bytes ?? 0, bytes) })
  }

  /** A shared object's verified bytes: fetched by its first reader, expected to be `expectBytes` long, at most `maxBytes`. */
  async get (cid: string, expectBytes: number, maxBytes: number, signal?: AbortSignal): Promise<HeldObject> {
    checkedCid(cid)
    const entry = this.shared.get(cid) ?? this.fetchShared(cid, expectBytes, maxBytes, signal)
    if (!entry.asked) {
      entry.asked = true
      // Its first reader is here: the next object is fetched once this one is in.
      entry.bytes.then(() => { this.readAhead(signal) }, () => {})
    }
    return await entry.bytes
  }

  private fetchShared (cid: string, expectBytes: number, maxBytes: number, signal?: AbortSignal): Shared {
    const created: Shared = { readers: this.expected.get(cid)?.readers ?? 1, reserved: 0, bytes: Promise.resolve(new HeldObject([])), reusable: true, asked: false }
    this.expected.delete(cid)
    // Fetched ahead and let go by every reader while it waited for room: not fetched at all.
    const wanted = (): boolean => this.shared.get(cid) === created
    created.bytes = this.fetchWithin(cid, expectBytes, maxBytes, signal, (reserved, held) => { created.reserved = reserved; created.held = held }, wanted)
    // A failed fetch is each reader's failure; its reservation is already given back.
    created.bytes.catch(() => {})
    this.shared.set(cid, created)
    return created
  }

  /**
   * Fetches the next object announced while the files of the one just in are opened: the sealing
   * threads would wait for it otherwise. One object ahead of the readers, within the same budget.
   */
  private readAhead (signal?: AbortSignal): void {
    const [next] = this.expected
    if (next === undefined || signal?.aborted === true) return
    const [cid, { bytes }] = next
    // A name that is not a CID is left to its first reader, whose get refuses it.
    if (bytes === 0 || !isCanonicalCid(cid)) return
    this.fetchShared(cid, bytes, Math.max(bytes, MAX_OBJECT_BYTES), signal)
  }

  /**
   * One reader of a shared object is done with it (read or not): the last one drops it. Not
   * `reusable` when a thread may still be reading it (a read given up midway): its slabs are then
   * left to the collector, never handed to another fetch.
   */
  release (cid: string, reusable = true): void {
    const entry = this.shared.get(cid)
    if (entry === undefined) {
      // Released without a read: one reader fewer to wait for.
      const known = this.expected.get(cid)
      if (known !== undefined && known.readers > 1) known.readers--
      else this.expected.delete(cid)
      return
    }
    entry.reusable &&= reusable
    if (--entry.readers > 0) return
    this.shared.delete(cid)
    if (entry.held !== undefined) { this.free(entry.reserved, entry.reusable ? entry.held : undefined); return }
    // Fetched ahead and let go before it came in: its slabs go back once it does (a failed fetch gave them back).
    entry.bytes.then(() => { this.free(entry.reserved, entry.reusable ? entry.held : undefined) }, () => {})
  }

  /** An object only the caller reads (a part): its bytes, and `drop` to give them back (`reusable` as for {@link release}). */
  async own (cid: string, expectBytes: number, maxBytes: number, signal?: AbortSignal): Promise<{ bytes: HeldObject, drop: (reusable?: boolean) => void }> {
    checkedCid(cid)
    let reserved = 0
    const bytes = await this.fetchWithin(cid, expectBytes, maxBytes, signal, (r) => { reserved = r })
    let dropped = false
    return { bytes, drop: (reusable = true) => { if (!dropped) { dropped = true; this.free(reserved, reusable ? bytes : undefined) } } }
  }

  /** Fetches within the budget; `held` is told how many slabs stay reserved once the bytes are in. */
  private async fetchWithin (cid: string, expectBytes: number, maxBytes: number, signal: AbortSignal | undefined, held: (reserved: number, bytes: HeldObject) => void, wanted = (): boolean => true): Promise<HeldObject> {
    const want = slabsFor(Math.min(expectBytes, maxBytes))
    await this.reserve(want, signal)
    if (!wanted()) {
      this.free(want, undefined)
      held(0, new HeldObject([]))
      return new HeldObject([])
    }
    let taken = 0
    const slab = (): Uint8Array => {
      // What a gateway sends past the expectation is counted too (at most maxBytes).
      if (++taken > want) this.used++
      return this.spare.pop() ?? new Uint8Array(new SharedArrayBuffer(SLAB_BYTES))
    }
    let bytes: HeldObject
    try {
      bytes = new HeldObject(await this.fetchObject(cid, { signal, maxBytes, slab }))
    } catch (err) {
      // Slabs of a failed fetch are not reused: the failure may have come from a thread still reading them.
      this.free(Math.max(want, taken), undefined)
      throw err
    }
    const reserved = Math.max(want, taken)
    // Reserved but not filled (a shorter object than expected): back to the budget now.
    this.free(reserved - bytes.slabs.length, undefined)
    held(bytes.slabs.length, bytes)
    return bytes
  }

  private async reserve (slabs: number, signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted()
    if (this.queue.length === 0 && (this.used === 0 || this.used + slabs <= this.budget)) {
      this.used += slabs
      return
    }
    await new Promise<void>((resolve, reject) => {
      const waiter = {
        slabs,
        go: () => { signal?.removeEventListener('abort', onAbort); this.used += slabs; resolve() }
      }
      const onAbort = (): void => {
        const at = this.queue.indexOf(waiter)
        if (at >= 0) this.queue.splice(at, 1)
        reject(signal?.reason as Error)
        this.wake()
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      this.queue.push(waiter)
    })
  }

  /** Gives `slabs` back to the budget; the object's slabs become spares (within the budget) when it may be reused. */
  private free (slabs: number, object: HeldObject | undefined): void {
    this.used -= slabs
    for (const view of object?.slabs ?? []) {
      if (this.spare.length + this.used >= this.budget) break
      this.spare.push(new Uint8Array(view.buffer, 0, SLAB_BYTES))
    }
    this.wake()
  }

  private wake (): void {
    while (this.queue.length > 0) {
      const first = this.queue[0] as { slabs: number, go: () => void }
      if (this.used !== 0 && this.used + first.slabs > this.budget) return
      this.queue.shift()
      first.go()
    }
  }
}
