import { constants } from 'node:fs'
import { open, type FileHandle } from 'node:fs/promises'
import { basename } from 'node:path'
import { CID } from 'multiformats/cid'
import { equals } from 'multiformats/bytes'
import { CidBuilder, type CidProfile, type ObjectBlocks } from '../content/index.js'
import { HttpFailure } from './http.js'
import type { FileIdentity } from './pack-link.js'
import type { ServiceParts } from './parts.js'
import { putUnder, uploadCommitter, type Added, type Allowance } from './upload-commit.js'

/** Bytes read at a time (a whole number of 256 KiB leaves). */
const READ_BYTES = 1024 * 1024

/**
 * A file added by the process the service runs in (the embedded service's own uploads): what
 * `POST /api/v0/add` does with one file once it has parsed the request, without HTTP.
 */
export interface InProcessAdd {
  /**
   * A file this process wrote and keeps unchanged until answered (a spool file, a segment). With
   * `blocks` it may become the service's own (hard-linked as a pack): never written to again.
   */
  readonly path: string
  readonly profile: CidProfile
  /** The API key of the account it is stored for, as the upload route's caller presents it. */
  readonly apiKey: string
  /**
   * The object's blocks as this process hashed them while writing the file, with `expectedCid`
   * its root: stored as they are named, not hashed again. Without them the file is hashed here,
   * as the upload route does.
   */
  readonly blocks?: ObjectBlocks
  readonly expectedCid?: string
  /** The name the uploads listing shows; the file's own name when not given. */
  readonly name?: string
}

export interface InProcessAdded { readonly cid: string, readonly size: number }

async function readFully (handle: FileHandle, into: Buffer, length: number, position: number): Promise<Buffer> {
  let got = 0
  while (got < length) {
    const { bytesRead } = await handle.read(into, got, length - got, position + got)
    if (bytesRead === 0) throw new HttpFailure(400, `the file to add ended at ${position + got} bytes while it was read: it changed before it was stored`)
    got += bytesRead
  }
  return into.subarray(0, length)
}

/** The leaves' count the object's size makes, and whether the recorded tree ends at `root`. */
function blocksFit (blocks: ObjectBlocks, profile: CidProfile, size: number, root: CID): boolean {
  if (!profile.rawLeaves || blocks.leaves.length !== Math.max(1, Math.ceil(size / profile.chunkSize))) return false
  const top = blocks.nodes.length === 0 ? (blocks.leaves.length === 1 ? blocks.leaves[0] : undefined) : blocks.nodes.at(-1)?.[0]
  return top !== undefined && equals(top, root.bytes)
}

/**
 * Stores the named blocks: the file taken whole as a pack when it can be (`BlockStore.adopt`),
 * else each leaf's bytes read from the file in order, then the nodes above them.
 */
async function storeNamed (parts: ServiceParts, allowance: Allowance, handle: FileHandle, request: InProcessAdd & { blocks: ObjectBlocks }, file: FileIdentity): Promise<void> {
  const size = file.size
  const { blocks, profile } = request
  // Counted whole before anything is written: a refused add stores nothing.
  allowance.quota.take(size)
  if (await parts.blocks.adopt(request.path, blocks.leaves.map(b => CID.decode(b)), profile.chunkSize, blocks.nodes.map(([c, b]) => [CID.decode(c), b] as const), file)) return
  const perRead = Math.max(1, Math.floor(READ_BYTES / profile.chunkSize))
  const buffer = Buffer.allocUnsafe(perRead * profile.chunkSize)
  for (let i = 0; i < blocks.leaves.length; i += perRead) {
    const start = i * profile.chunkSize
    const bytes = await readFully(handle, buffer, Math.min(size, start + perRead * profile.chunkSize) - start, start)
    for (let j = 0; j < perRead && i + j < blocks.leaves.length; j++) {
      const leaf = bytes.subarray(j * profile.chunkSize, (j + 1) * profile.chunkSize)
      putUnder(parts, allowance, CID.decode(blocks.leaves[i + j] as Uint8Array), leaf)
    }
  }
  for (const [cid, block] of blocks.nodes) putUnder(parts, allowance, CID.decode(cid), block)
}

/** Hashes the file under `profile` as the upload route does, storing each block as it is made. */
async function storeHashed (parts: ServiceParts, allowance: Allowance, handle: FileHandle, profile: CidProfile, size: number): Promise<{ cid: CID, dagSize: number }> {
  const builder = new CidBuilder(profile, { onBlock: (cid, block) => { putUnder(parts, allowance, cid, block) } })
  const buffer = Buffer.allocUnsafe(READ_BYTES)
  for (let at = 0; at < size; at += READ_BYTES) {
    const bytes = await readFully(handle, buffer, Math.min(READ_BYTES, size - at), at)
    allowance.quota.take(bytes.byteLength)
    builder.update(bytes)
  }
  const root = builder.finishLink()
  return { cid: root.cid, dagSize: root.treeSize }
}

/**
 * Adds files for this process as the upload route adds a request's (the same quota, the same
 * durability before an answer, the same listing record, the same failures), without HTTP: no
 * multipart, and blocks this process already hashed are not hashed again.
 */
export function inProcessAdder (parts: ServiceParts): (request: InProcessAdd, address: string) => Promise<InProcessAdded> {
  const commit = uploadCommitter(parts)
  return async (request, address) => {
    const [added] = await commit(address, async (allowance): Promise<Added[]> => {
      // Never through a symlink: what this process wrote is a file of its own.
      const handle = await open(request.path, constants.O_RDONLY | constants.O_NOFOLLOW)
      try {
        const { dev, ino, size } = await handle.stat()
        const root = request.expectedCid === undefined ? undefined : CID.parse(request.expectedCid)
        let made: { cid: CID, dagSize: number }
        if (root !== undefined && request.blocks !== undefined && blocksFit(request.blocks, request.profile, size, root)) {
          await storeNamed(parts, allowance, handle, { ...request, blocks: request.blocks }, { dev, ino, size })
          made = { cid: root, dagSize: size }
        } else {
          made = await storeHashed(parts, allowance, handle, request.profile, size)
        }
        const cid = made.cid.toString()
        return [{ cid, size, dagSize: made.dagSize, name: request.name ?? basename(request.path), mime: 'application/octet-stream' }]
      } finally {
        await handle.close()
      }
    })
    return { cid: (added as Added).cid, size: (added as Added).size }
  }
}
