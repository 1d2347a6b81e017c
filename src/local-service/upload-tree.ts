import { createHash } from 'node:crypto'
import * as dagPb from '@ipld/dag-pb'
import { UnixFS } from 'ipfs-unixfs'
import { CID } from 'multiformats/cid'
import { create as createDigest } from 'multiformats/hashes/digest'
import type { CidProfile } from '../content/index.js'
import { HttpFailure } from './http.js'
import type { Added } from './upload-commit.js'

/**
 * Kubo shards a directory (HAMT) once its links' names and CIDs pass this many bytes. This
 * service makes only plain directories, so it refuses one that large rather than give another CID.
 */
export const SHARDING_BYTES = 256 * 1024
/** The most path segments a file's name may have in one upload. */
export const MAX_PATH_DEPTH = 128

const SHA256 = 0x12
const DIRECTORY_DATA = new UnixFS({ type: 'directory' }).marshal()

interface Dir { readonly children: Map<string, Dir | Added> }

const shown = (name: string): string => JSON.stringify(name.slice(0, 100))

/**
 * A name's segments. A name with a `/` is a relative path, cleaned as Kubo cleans one (empty and
 * `.` segments dropped: the SDK sends `folder//a.txt` for a folder given with a trailing slash);
 * an absolute one or a `..` is a 400 naming it. A name without a `/` is a file's name as sent.
 */
export function segmentsOf (name: string): string[] {
  if (!name.includes('/')) return [name]
  const segments = name.split('/').filter(s => s !== '' && s !== '.')
  if (name.startsWith('/') || segments.length === 0 || segments.includes('..')) throw new HttpFailure(400, `file name ${shown(name)} is not a relative path: no leading "/" and no ".." segment`)
  if (segments.length > MAX_PATH_DEPTH) throw new HttpFailure(400, `file name ${shown(name)} has more than ${MAX_PATH_DEPTH} path segments`)
  return segments
}

function isDir (entry: Dir | Added): entry is Dir {
  return 'children' in entry
}

/**
 * The roots of an upload whose files are named by paths (`folder/sub/a.txt`, as the storage
 * service's SDK sends a folder): each top-level directory built as `ipfs add` builds it, its
 * blocks given to `store`. A file named without a `/` is a root of its own, as before. Roots come
 * in the order their first file came; a directory's size is its files' bytes, its `dagSize` its blocks'.
 */
export function uploadRoots (files: readonly Added[], profile: CidProfile, store: (cid: CID, block: Uint8Array) => void): Added[] {
  const roots: Array<[string, Dir | Added]> = []
  const dirs = new Map<string, Dir>()
  for (const file of files) {
    const [first, ...rest] = segmentsOf(file.name) as [string, ...string[]]
    if (rest.length === 0) { roots.push([first, { ...file, name: first }]); continue }
    let dir = dirs.get(first)
    if (dir === undefined) {
      dir = { children: new Map() }
      dirs.set(first, dir)
      roots.push([first, dir])
    }
    place(dir, rest, file)
  }
  return roots.map(([name, entry]) => isDir(entry) ? buildDir(name, entry, profile, store) : entry)
}

/** Puts `file` at `path` under `dir`, making the directories on the way; a 400 for a path taken. */
function place (dir: Dir, path: readonly string[], file: Added): void {
  let level = dir.children
  for (const [i, segment] of path.entries()) {
    const found = level.get(segment)
    const last = i === path.length - 1
    if (found === undefined) {
      const made: Dir | Added = last ? { ...file, name: segment } : { children: new Map() }
      level.set(segment, made)
      if (!last) level = (made as Dir).children
    } else if (last || !isDir(found)) {
      throw new HttpFailure(400, `${shown(file.name)} is sent twice, or is under a name also sent as a file`)
    } else {
      level = found.children
    }
  }
}

function buildDir (path: string, dir: Dir, profile: CidProfile, store: (cid: CID, block: Uint8Array) => void): Added {
  let size = 0
  let childBytes = 0
  let linkBytes = 0
  const links: dagPb.PBLink[] = []
  for (const [name, entry] of dir.children) {
    const child = isDir(entry) ? buildDir(`${path}/${name}`, entry, profile, store) : entry
    const cid = CID.parse(child.cid)
    size += child.size
    childBytes += child.dagSize
    linkBytes += Buffer.byteLength(name) + cid.bytes.byteLength
    links.push({ Name: name, Hash: cid, Tsize: child.dagSize })
  }
  if (linkBytes >= SHARDING_BYTES) {
    throw new HttpFailure(400, `directory ${shown(path)} is too large for a plain directory (Kubo would shard it, which this service does not implement): send fewer or shorter names`)
  }
  const block = dagPb.encode(dagPb.prepare({ Data: DIRECTORY_DATA, Links: links }))
  const digest = createDigest(SHA256, createHash('sha256').update(block).digest())
  const cid = profile.cidVersion === 0 ? CID.createV0(digest as never) : CID.createV1(dagPb.code, digest)
  store(cid, block)
  return { cid: cid.toString(), size, dagSize: block.byteLength + childBytes, name: path.slice(path.lastIndexOf('/') + 1), mime: '' }
}
