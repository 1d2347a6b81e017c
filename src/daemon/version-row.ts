import type { Entry, Index } from '../index/index.js'

/**
 * A row for one version of `folder/path` named by its CID, as the timeline lists versions that
 * are no longer any device's current row: the stored record gives the size, a row of the same
 * path (any device, deleted too) its CID profile, else this device's configured one. A wrong
 * profile cannot pass: the download is hashed to the CID before anything is sent.
 * Only a CID the path held (a row of it in `index`, or one of `history`, the timeline's CIDs) is
 * answered: any other stored content would otherwise go out under this path's name.
 */
export function versionRow (index: Index, shown: string, cid: string, profile: string, history: readonly (string | null)[] = []): Entry | undefined {
  const trimmed = shown.replace(/^\/+/, '')
  const same = index.entries.list({ prefix: trimmed, includeDeleted: true }).filter(e => `${e.folder}/${e.path}` === trimmed)
  const slash = trimmed.indexOf('/')
  if (slash <= 0) return undefined
  if (!same.some(e => e.cid === cid) && !history.includes(cid)) return undefined
  const record = index.content.lookup(cid)[0]
  const base = same.find(e => e.cid === cid) ?? same[0]
  if (base === undefined && record === undefined) return undefined
  return {
    deviceId: base?.deviceId ?? '', folder: trimmed.slice(0, slash), path: trimmed.slice(slash + 1),
    size: record?.size ?? base?.size ?? 0, mtimeMs: base?.mtimeMs ?? Date.now(), cid,
    cidProfile: same.find(e => e.cid === cid)?.cidProfile ?? base?.cidProfile ?? profile,
    updatedAt: base?.updatedAt ?? 0, deleted: false, seq: base?.seq ?? 0, meta: same.find(e => e.cid === cid)?.meta ?? null
  }
}
