import type { FileAttrs } from '../../custody/index.js'
import type { FileMeta } from '../../index/index.js'
import { groupId, userId } from '../../util/owner-names.js'

/** What a restore could not give an entry as recorded, counted once a run and said once. */
export type AttrsNote = 'mode-unknown' | 'owner-not-restored' | 'setid-dropped'

/** Whether this process may give files their recorded owners (root). */
export const restoresOwners = (): boolean => typeof process.getuid === 'function' && process.getuid() === 0

/**
 * The mode and owner a restored entry is given. A mode never wider than recorded; a row from
 * before modes were recorded gets 0600. As root the owner is taken by name where this device
 * knows the name (a user's id differs between machines), else by number; otherwise the restoring
 * user keeps it, and setuid and setgid bits, which would then mean another user, are dropped.
 */
export function restoredAttrs (meta: FileMeta | null, note: (what: AttrsNote) => void): FileAttrs {
  if (meta === null) {
    note('mode-unknown')
    return { mode: 0o600 }
  }
  let mode = meta.mode & 0o7777
  // Setuid or setgid on a file others may write is never a real file's: dropped.
  if ((mode & 0o6000) !== 0 && (mode & 0o022) !== 0) { note('setid-dropped'); mode &= ~0o6000 }
  if (restoresOwners()) {
    const uid = byName(meta.owner === null ? undefined : userId(meta.owner), meta.uid)
    const gid = byName(meta.group === null ? undefined : groupId(meta.group), meta.gid)
    // An owner that cannot be told keeps root's: setuid and setgid would then mean root.
    if ((mode & 0o4000) !== 0 && uid === undefined) { note('setid-dropped'); mode &= ~0o4000 }
    if ((mode & 0o2000) !== 0 && gid === undefined) { note('setid-dropped'); mode &= ~0o2000 }
    return { mode, uid, gid }
  }
  const own = process.getuid?.() === meta.uid
  if (!own) note('owner-not-restored')
  if ((mode & 0o6000) !== 0 && !own) {
    note('setid-dropped')
    return { mode: mode & ~0o6000 }
  }
  return { mode }
}

/**
 * The id to give: this device's for the recorded name, else the recorded number. A name that
 * means root here while the number recorded is not root's is not trusted with it.
 */
function byName (named: number | undefined, recorded: number): number | undefined {
  const number = Number.isSafeInteger(recorded) && recorded >= 0 && recorded < 2 ** 32 - 1 ? recorded : undefined
  if (named === 0 && number !== 0) return number
  return named ?? number
}

/** What each note means, for the run's summary. */
export const NOTE_TEXT: Readonly<Record<AttrsNote, string>> = {
  'mode-unknown': 'their publish records no mode (an older cidsync): they were made 0600; `chmod` them as you need',
  'owner-not-restored': 'they keep the restoring user as owner (restoring owners needs root)',
  'setid-dropped': 'their setuid or setgid bits were dropped: they would name another user than the recorded owner'
}
