import { Interned } from '../util/interned.js'

/**
 * What an entry is beyond its bytes (docs/snapshot-format.md, "What a file is"). A directory's
 * path ends with `/`, so its row sorts where a walk meets it: after `a-b`, before `a/x`.
 */
export type EntryKind = 'file' | 'symlink' | 'dir'

export interface FileMeta {
  readonly kind: EntryKind
  /** Permission bits with setuid, setgid and sticky (`st_mode & 0o7777`). */
  readonly mode: number
  readonly uid: number
  readonly gid: number
  /** The owner's and group's names where this device could tell them. */
  readonly owner: string | null
  readonly group: string | null
  /** A symlink's target, as written: never followed. */
  readonly target: string | null
  /** Files that are hard links of one another share it (their device and inode); null when a file has one name. */
  readonly linkGroup: string | null
}

/** The columns that hold a {@link FileMeta}, in the order the index holds them. */
export const META_COLUMNS = 'kind, mode, uid, gid, owner, grp, target, link_group'

/** A row's columns of what it is, as read. */
export interface MetaRow {
  kind: string | null, mode: number | null, uid: number | null, gid: number | null, owner: string | null, grp: string | null, target: string | null, link_group: string | null
}

const KINDS = new Set<string>(['file', 'symlink', 'dir'])

// Owners' and groups' names repeat across every row: each held once.
const names = new Interned()

/** Most metas to share at once: past it the shared ones start again, as {@link Interned} does. */
const SHARED_METAS = 4096
// Most files of a tree have one of a few modes and owners, and no target or link: each such meta is held once.
const shared = new Map<string, FileMeta>()

function sharedMeta (meta: FileMeta): FileMeta {
  if (meta.target !== null || meta.linkGroup !== null) return meta
  // Names come from other devices' rows: each is prefixed with its length, so no two metas share a key.
  const { owner, group } = meta
  const key = `${meta.kind} ${meta.mode} ${meta.uid} ${meta.gid} ${owner === null ? -1 : owner.length}:${owner ?? ''}${group === null ? -1 : group.length}:${group ?? ''}`
  const known = shared.get(key)
  if (known !== undefined) return known
  if (shared.size >= SHARED_METAS) shared.clear()
  // Frozen: a write to one row's meta would change every row sharing it.
  shared.set(key, Object.freeze(meta))
  return meta
}

/**
 * The meta a row records, or null for a row from before kinds were recorded (a regular file, mode
 * unknown). Rows that say the same share one meta: it is never written to.
 */
export function metaOfRow (row: MetaRow): FileMeta | null {
  if (row.kind === null || !KINDS.has(row.kind)) return null
  return sharedMeta({
    kind: names.of(row.kind) as EntryKind,
    // A mode outside the permission bits is another device's mistake or forgery: private instead.
    mode: row.mode !== null && Number.isInteger(row.mode) && row.mode >= 0 && row.mode <= 0o7777 ? row.mode : 0o600,
    uid: row.uid ?? -1,
    gid: row.gid ?? -1,
    owner: names.of(row.owner),
    group: names.of(row.grp),
    target: row.target,
    linkGroup: row.link_group
  })
}

/** The values bound for {@link META_COLUMNS}. */
export function metaValues (meta: FileMeta | undefined): [string | null, number | null, number | null, number | null, string | null, string | null, string | null, string | null] {
  if (meta === undefined) return [null, null, null, null, null, null, null, null]
  return [meta.kind, meta.mode, meta.uid, meta.gid, meta.owner, meta.group, meta.target, meta.linkGroup]
}

/** Whether two metas say the same of a file (what a rescan compares: a chmod moves no mtime). */
export function sameMeta (a: FileMeta | null | undefined, b: FileMeta | null | undefined): boolean {
  if (a === b) return true
  if (a == null || b == null) return false
  return a.kind === b.kind && a.mode === b.mode && a.uid === b.uid && a.gid === b.gid && a.target === b.target && a.linkGroup === b.linkGroup
}

/** Whether a row's path names a directory (its path ends with `/`). */
export function isDirPath (path: string): boolean {
  return path.endsWith('/')
}
