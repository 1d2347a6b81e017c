import { openSync, readSync, closeSync, fstatSync, constants } from 'node:fs'
import type { CID } from 'multiformats/cid'
import { BalancedTree } from './unixfs-tree.js'
import { leafDigest, leafLink, sha256 } from './leaf.js'
import type { CidProfile } from './profiles.js'
import { FileChangedWhileHashingError, NotAFileError, statTuple, type HashBuffers, type StatTuple } from './file-cid.js'

/** A run of whole chunks of one file: leaves `first` to `first + count - 1`. */
export interface FileSegment { readonly first: number, readonly count: number }

const DIGEST_BYTES = 32

/** Cuts a file's leaves into `parts` runs of about equal length, in order. */
export function planSegments (size: number, profile: CidProfile, parts: number): FileSegment[] {
  const leaves = Math.max(1, Math.ceil(size / profile.chunkSize))
  const per = Math.ceil(leaves / Math.max(1, parts))
  const segments: FileSegment[] = []
  for (let first = 0; first < leaves; first += per) segments.push({ first, count: Math.min(per, leaves - first) })
  return segments
}

/**
 * The leaf digests of one segment of a file, read with blocking positional reads (a worker
 * thread's job). The file must still have `size` bytes and the same mtime from start to end.
 */
export function segmentDigestsSync (path: string, profile: CidProfile, segment: FileSegment, size: number, buffers: HashBuffers, onRead?: (bytes: number) => void): { digests: Uint8Array, mtimeMs: number, stat: StatTuple } {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK)
  try {
    const before = fstatSync(fd)
    if (!before.isFile()) throw new NotAFileError(`${path} is not a regular file`, before.isDirectory() ? 'EISDIR' : 'ERR_NOT_A_FILE')
    if (before.size !== size) throw new FileChangedWhileHashingError(`${path} changed size before it was hashed`)
    const digests = new Uint8Array(segment.count * DIGEST_BYTES)
    const chunksPerRead = Math.max(1, Math.floor(buffers.read.byteLength / profile.chunkSize))
    for (let done = 0; done < segment.count;) {
      const chunks = Math.min(chunksPerRead, segment.count - done)
      const offset = (segment.first + done) * profile.chunkSize
      const want = Math.min(chunks * profile.chunkSize, size - offset)
      let filled = 0
      while (filled < want) {
        const read = readSync(fd, buffers.read, filled, want - filled, offset + filled)
        if (read === 0) throw new FileChangedWhileHashingError(`${path} shrank while it was being hashed`)
        filled += read
      }
      for (let c = 0; c < chunks; c++) {
        const chunk = buffers.read.subarray(c * profile.chunkSize, Math.min((c + 1) * profile.chunkSize, filled))
        digests.set(leafDigest(profile, chunk), (done + c) * DIGEST_BYTES)
      }
      onRead?.(filled)
      done += chunks
    }
    const after = fstatSync(fd)
    if (after.size !== before.size || after.mtimeMs !== before.mtimeMs) throw new FileChangedWhileHashingError(`${path} changed while it was being hashed`)
    return { digests, mtimeMs: before.mtimeMs, stat: statTuple(before) }
  } finally {
    closeSync(fd)
  }
}

/** The file's CID from the digests of all its segments, given in order. */
export function assembleCid (profile: CidProfile, size: number, segmentDigests: readonly Uint8Array[]): CID {
  const tree = new BalancedTree(profile, block => sha256(block))
  let leaf = 0
  for (const digests of segmentDigests) {
    for (let at = 0; at < digests.byteLength; at += DIGEST_BYTES, leaf++) {
      const length = Math.min(profile.chunkSize, size - leaf * profile.chunkSize)
      tree.addLeaf(leafLink(profile, digests.subarray(at, at + DIGEST_BYTES), length))
    }
  }
  return tree.finish().cid
}
