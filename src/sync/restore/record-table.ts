import { SMALL_FILE_BYTES, type ContentRecord } from '../../custody/index.js'

/** How a file is read, in the order a restore reads them: large files, then packs' files, then plain ones. */
const LARGE = 0
const PACKED = 1
const PLAIN = 2
const NONE = 3

/**
 * The checked records of a restore's rows, held in a few numbers each: a pack's file as its
 * pack, offset and length, with its sealing and key shared. A large file, a plain one, one of
 * several objects and a record of another file are kept whole: they are few. What a restore
 * holds for a tree of a million files is then tens of bytes a file, not a kilobyte.
 *
 * The records were parsed and checked before they are set: one read back is the same record.
 */
export class RecordTable {
  private readonly kind: Uint8Array
  private readonly pack: Int32Array
  private readonly offset: Float64Array
  private readonly length: Float64Array
  private readonly seal: Int32Array
  private readonly packs: string[] = []
  private readonly packIds = new Map<string, number>()
  private readonly seals: Array<Pick<ContentRecord, 'sealing' | 'keyId' | 'keySalt'>> = []
  private readonly sealIds = new Map<string, number>()
  private readonly whole = new Map<number, ContentRecord>()

  constructor (readonly size: number) {
    this.kind = new Uint8Array(size).fill(NONE)
    this.pack = new Int32Array(size)
    this.offset = new Float64Array(size)
    this.length = new Float64Array(size)
    this.seal = new Int32Array(size)
  }

  /** Row `i`'s record, checked; the row's file is `cid` of `size` bytes. */
  set (i: number, record: ContentRecord, cid: string, size: number): void {
    const [object, offset, length] = record.objects.length === 1 ? record.objects[0] as readonly [string, number, number] : ['', 0, 0]
    // A record of another file is kept as it is: the fetch refuses it, and says why.
    const other = record.cid !== cid || record.size !== size
    if (other || record.objects.length !== 1 || record.sealing === 'none' || record.size >= SMALL_FILE_BYTES) {
      this.whole.set(i, record)
      this.kind[i] = record.sealing === 'none' ? PLAIN : LARGE
      return
    }
    let pack = this.packIds.get(object)
    if (pack === undefined) { pack = this.packs.length; this.packs.push(object); this.packIds.set(object, pack) }
    const sealKey = `${record.sealing} ${record.keyId} ${record.keySalt}`
    let seal = this.sealIds.get(sealKey)
    if (seal === undefined) { seal = this.seals.length; this.seals.push({ sealing: record.sealing, keyId: record.keyId, keySalt: record.keySalt }); this.sealIds.set(sealKey, seal) }
    this.kind[i] = PACKED
    this.pack[i] = pack
    this.offset[i] = offset
    this.length[i] = length
    this.seal[i] = seal
  }

  /** Row `i`'s record as set, for the same `cid` and `size`; undefined when none was set. */
  get (i: number, cid: string, size: number): ContentRecord | undefined {
    const kind = this.kind[i]
    if (kind === NONE || kind === undefined) return undefined
    if (kind !== PACKED) return this.whole.get(i)
    const seal = this.seals[this.seal[i] as number] as Pick<ContentRecord, 'sealing' | 'keyId' | 'keySalt'>
    return { cid, size, sealing: seal.sealing, keyId: seal.keyId, keySalt: seal.keySalt, objects: [[this.packs[this.pack[i] as number] as string, this.offset[i] as number, this.length[i] as number]] }
  }

  /**
   * The rows with a record, in the order to read them: large files first, then each pack's files
   * by offset, then plain files; rows in their own order within each.
   */
  order (): Uint32Array {
    let count = 0
    for (const kind of this.kind) if (kind !== NONE) count++
    const order = new Uint32Array(count)
    let at = 0
    for (let i = 0; i < this.size; i++) if (this.kind[i] !== NONE) order[at++] = i
    const { kind, pack, offset } = this
    return order.sort((a, b) => {
      const byKind = (kind[a] as number) - (kind[b] as number)
      if (byKind !== 0) return byKind
      if (kind[a] !== PACKED) return a - b
      return (pack[a] as number) - (pack[b] as number) || (offset[a] as number) - (offset[b] as number) || a - b
    })
  }
}
