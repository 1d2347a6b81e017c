/** What a special file is, for the list of entries not indexed; undefined for files, links and directories. */
export function specialFileKind (entry: { isFIFO: () => boolean, isSocket: () => boolean, isBlockDevice: () => boolean, isCharacterDevice: () => boolean }): string | undefined {
  if (entry.isFIFO()) return 'a FIFO'
  if (entry.isSocket()) return 'a socket'
  if (entry.isBlockDevice()) return 'a block device'
  if (entry.isCharacterDevice()) return 'a character device'
  return undefined
}

/** The reason a special file is listed under: it has no content to index, store or restore. */
export const SPECIAL_FILE = 'ERR_SPECIAL_FILE'
