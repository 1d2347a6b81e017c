import type { FileHandle } from 'node:fs/promises'

/**
 * What a restored file is given once verified and checked in place: its mode, and its owner and
 * group where this process may set them (as root). Until then a temp file is 0600.
 */
export interface FileAttrs {
  readonly mode: number
  readonly uid?: number
  readonly gid?: number
}

/** The mode a user's file got before modes were recorded; still what a caller without attrs gets. */
export function defaultAttrs (): FileAttrs {
  return { mode: 0o644 & ~process.umask() }
}

/**
 * Gives an open temp its owner first, then its mode: a chown clears setuid and setgid bits, so the
 * mode comes after it. Through the descriptor only: a path could lead elsewhere by then.
 */
export async function applyAttrs (handle: FileHandle, attrs: FileAttrs): Promise<void> {
  if (attrs.uid !== undefined || attrs.gid !== undefined) await handle.chown(attrs.uid ?? -1, attrs.gid ?? -1)
  await handle.chmod(attrs.mode & 0o7777)
}
