import { createReadStream, type ReadStream } from 'node:fs'
import { open } from 'node:fs/promises'
import { CarBlockIterator } from '@ipld/car/iterator'
import * as dagPb from '@ipld/dag-pb'
import type { CID } from 'multiformats/cid'
import { boundCarSections, CarV1Reader, checkBlock, fileSource, flatCidText } from '../content/index.js'
import { CarBlockMismatchError, CarFormatError } from '../errors.js'
import { isPlainNode, rootPublish, ROOT_LINKS } from '../snapshot/index.js'
import { CarPartPlanner, type CarPart, type CarPartLimits } from './car-parts.js'

/** What a CAR holds, every block checked. */
export interface ScannedCar {
  /** The CAR's root: a plain root (docs/snapshot-format.md), or the manifest in a CAR of an older cidsync. */
  readonly root: string
  /** The publish it holds: the plain root's `manifest` link, or the root itself. */
  readonly publish: string
  /** Blocks in it (a block there twice counted twice, as the service counts them). */
  readonly blocks: number
  readonly bytes: number
  /** The DAGs it holds: blocks no other block of it links to (each object of an export). */
  readonly objects: readonly string[]
  /** A CARv1's sections cut into parts each request can take ({@link CarPartPlanner}); none for a CARv2. */
  readonly parts: readonly CarPart[] | undefined
}

/** Where a scan gives up: far past what an export of 64 GiB of objects holds. */
export const MAX_SCAN_BLOCKS = 4_000_000

/**
 * Links the scan remembers in all (to tell the CAR's DAGs apart): a whole DAG has one per block
 * below its root, so twice the blocks it takes. Past it a CAR of nodes of made-up links grew the
 * scan's memory (~100 bytes a link) until the process died.
 */
export const MAX_SCAN_LINKS = 2 * MAX_SCAN_BLOCKS

/** The largest block a scan reads (services refuse past 1 or 2 MiB): a CAR announcing more is refused as the length is read, not buffered. */
export const MAX_SCAN_BLOCK_BYTES = 4 * 1024 * 1024

/**
 * Reads a CAR file as it streams (a block at a time) and checks every block against its CID
 * before anything is sent anywhere: the first that does not match is named
 * ({@link CarBlockMismatchError}). It must have one root, present among its blocks.
 */
export async function scanCar (path: string, signal?: AbortSignal, bounds: { readonly maxLinks?: number, readonly parts?: CarPartLimits } = {}): Promise<ScannedCar> {
  const maxLinks = bounds.maxLinks ?? MAX_SCAN_LINKS
  const handle = await open(path, 'r')
  let stream: ReadStream | undefined
  try {
    // A CARv1 (what `export` writes) is read through one buffer, its blocks never copied; a CARv2
    // through @ipld/car's iterator.
    let v1: CarV1Reader | undefined
    try {
      v1 = await CarV1Reader.open(fileSource(handle), { maxBlockBytes: MAX_SCAN_BLOCK_BYTES, signal })
    } catch (err) {
      if (signal?.aborted === true) throw err
      throw new CarFormatError(`${path} is not a CAR file: ${(err as Error).message}`)
    }
    let roots: CID[]
    let blocks: AsyncIterator<{ cid: CID, bytes: Uint8Array }>
    if (v1 !== undefined) {
      roots = v1.roots
      blocks = v1.sections()
    } else {
      stream = createReadStream(path, { highWaterMark: 1024 * 1024, signal })
      let reader: CarBlockIterator
      try {
        reader = await CarBlockIterator.fromIterable(boundCarSections(stream, MAX_SCAN_BLOCK_BYTES))
      } catch (err) {
        throw new CarFormatError(`${path} is not a CAR file: ${(err as Error).message}`)
      }
      roots = await reader.getRoots()
      blocks = reader[Symbol.asyncIterator]()
    }
    if (roots.length !== 1) throw new CarFormatError(`${path} has ${roots.length} roots: a CAR of cidsync has one, the plain root of the publish it holds (or its manifest, from an older cidsync)`)
    const root = (roots[0] as CID).toString()
    const planner = v1 === undefined ? undefined : new CarPartPlanner(v1.position, bounds.parts)
    const seen = new Set<string>()
    const linked = new Set<string>()
    // The plain root's own nodes: not objects, and what they link is linked by no object. They come
    // last, the root first: each is known as one from the root down (see plainTargets).
    const plain = new Set<string>()
    const expected = new Set<string>()
    let publish: string | undefined
    let inPlain = false
    let bytes = 0
    let count = 0
    let links = 0
    for (;;) {
      let next: IteratorResult<{ cid: CID, bytes: Uint8Array }>
      try {
        next = await blocks.next()
      } catch (err) {
        if (signal?.aborted === true) throw err
        throw new CarFormatError(`${path} is damaged after ${seen.size} blocks: ${(err as Error).message}`)
      }
      if (next.done === true) break
      // Views of the reader's buffer (read over by the next block): only text is kept of them.
      const { cid } = next.value
      const text = flatCidText(cid)
      const check = checkBlock(cid, next.value.bytes)
      if (check === 'mismatch') throw new CarBlockMismatchError(`block ${text} of ${path} does not match its CID (its bytes hash to something else): the CAR is damaged or forged; nothing was sent`, text)
      if (check === 'unsupported') throw new CarFormatError(`block ${text} of ${path} uses a hash function cidsync cannot check: nothing was sent`)
      if (seen.size >= MAX_SCAN_BLOCKS) throw new CarFormatError(`${path} holds more than ${MAX_SCAN_BLOCKS} blocks: more than cidsync imports at once`)
      seen.add(text)
      count++
      bytes += next.value.bytes.byteLength
      const targets: string[] = []
      let plainNode = false
      if (cid.code === dagPb.code) {
        const node = decodeNode(path, text, next.value.bytes)
        links += node.Links.length
        if (links > maxLinks) throw new CarFormatError(`${path}'s blocks link to more than ${maxLinks} blocks, more than cidsync imports at once (a CAR of made-up links?): nothing was sent`)
        for (const link of node.Links) targets.push(flatCidText(link.Hash))
        const named = text === root ? rootPublish(node) : undefined
        if (named !== undefined) publish = flatCidText(named)
        // A node of the root met again (two publishes share a segments tree) is still the root's: its
        // links are not an object's, or the objects under it would be taken for parts of another.
        plainNode = plain.has(text) || (isPlainNode(node) && (named !== undefined || expected.has(text)))
        if (plainNode) {
          plain.add(text)
          expected.delete(text)
          for (const target of plainTargets(node, c => seen.has(c))) expected.add(target)
        } else for (const target of targets) linked.add(target)
      }
      if (text === root && !plainNode) publish = root
      // The plain root's nodes go in a part of their own: each object is sent whole before the root that links them all.
      if (plainNode !== inPlain) planner?.close()
      inPlain = plainNode
      planner?.add(text, targets, c => seen.has(c), (v1 as CarV1Reader).position)
    }
    if (!seen.has(root)) throw new CarFormatError(`${path} names ${root} as its root but does not hold it`)
    if (publish === undefined) throw new CarFormatError(`${path}'s root ${root} is a node with no data that names no manifest: not a CAR of cidsync`)
    if (!seen.has(publish) || plain.has(publish)) throw new CarFormatError(`${path}'s root names ${publish} as its publish but does not hold it`)
    return { root, publish, blocks: count, bytes, objects: [...seen].filter(cid => !linked.has(cid) && !plain.has(cid)), parts: planner?.finish() }
  } finally {
    stream?.destroy()
    await handle.close()
  }
}

/**
 * The blocks a plain root's node links that are nodes of the root too: a publish node's
 * `previous`, `segments` and `content`; a tree node's links not read yet (objects come before).
 */
function plainTargets (node: dagPb.PBNode, read: (cid: string) => boolean): string[] {
  const own = rootPublish(node) === undefined
    ? node.Links
    : node.Links.filter(l => l.Name === ROOT_LINKS.previous || l.Name === ROOT_LINKS.segments || l.Name === ROOT_LINKS.content)
  return own.map(l => flatCidText(l.Hash)).filter(c => !read(c))
}

function decodeNode (path: string, cid: string, bytes: Uint8Array): dagPb.PBNode {
  try {
    return dagPb.decode(bytes)
  } catch (err) {
    throw new CarFormatError(`block ${cid} of ${path} is not valid dag-pb (${(err as Error).message}): the CAR is damaged or forged; nothing was sent`)
  }
}
