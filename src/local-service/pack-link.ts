import { closeSync, constants, fstatSync, linkSync, openSync, unlinkSync } from 'node:fs'
import { HttpFailure } from './http.js'

/** Which file a caller holds open, and its size then (`BlockStore.adopt`). */
export interface FileIdentity { readonly dev: number, readonly ino: number, readonly size: number }

function changedBeforeStored (path: string, why: string): HttpFailure {
  return new HttpFailure(400, `the file to add (${path}) changed before it was stored (${why}): nothing of it was taken; seal it again`)
}

/**
 * Hard-links `path` as the new pack `target` and opens it for appends: undefined (nothing made)
 * when this filesystem cannot link it there (another filesystem, no hard links). What was linked
 * must be `file`, the very file the caller holds open, at the size it had then: the path is looked
 * up again to link it, and a file swapped, truncated or grown since would be indexed at offsets
 * its bytes do not hold; a symlink swapped in is taken as itself by link(), never followed, so it
 * is refused instead of nodes appended to whatever it names. Otherwise the link is removed and
 * a 400 says so.
 */
export function linkPack (path: string, target: string, file: FileIdentity): number | undefined {
  try {
    linkSync(path, target)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'EXDEV' || code === 'EPERM' || code === 'ENOTSUP' || code === 'EMLINK') return undefined
    throw err
  }
  let fd: number
  try {
    fd = openSync(target, constants.O_RDWR | constants.O_NOFOLLOW)
  } catch (err) {
    unlinkSync(target)
    if ((err as NodeJS.ErrnoException).code === 'ELOOP') throw changedBeforeStored(path, 'it was replaced by a symlink')
    throw err
  }
  try {
    const linked = fstatSync(fd)
    if (!linked.isFile() || linked.dev !== file.dev || linked.ino !== file.ino || linked.size !== file.size) {
      unlinkSync(target)
      throw changedBeforeStored(path, linked.ino !== file.ino || linked.dev !== file.dev ? 'another file took its name' : `it has ${linked.size} bytes, not ${file.size}`)
    }
  } catch (err) {
    closeSync(fd)
    throw err
  }
  return fd
}
