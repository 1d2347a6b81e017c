import type { StatTuple } from '../content/index.js'
import type { EntryKind, FileMeta } from '../index/index.js'
import { groupName, userName } from '../util/owner-names.js'

/** What the index records of an entry, from the stat it was seen under (names as this device tells them). */
export function entryMeta (kind: EntryKind, stat: StatTuple, target: string | null = null): FileMeta {
  const [mode, uid, gid, nlink, dev, ino] = stat
  return {
    kind,
    mode: mode & 0o7777,
    uid,
    gid,
    owner: userName(uid),
    group: groupName(gid),
    target,
    // Only regular files are hard links of one another here (a directory's link count counts its subdirectories).
    linkGroup: kind === 'file' && nlink > 1 ? `${dev}:${ino}` : null
  }
}
