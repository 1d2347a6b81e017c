import type { Entry } from '../../index/index.js'

/** Another name of a hard-link group, linked to the group's first once that is in place. */
export interface Link { readonly row: Entry, readonly first: Entry }

/**
 * A restore's live rows split by what brings them back: the files to fetch (one name a hard-link
 * group, the first), the other names of their groups, and what is not a file (symlinks, directories).
 */
export function splitRows (live: readonly Entry[]): { files: Entry[], linked: Link[], entries: Entry[] } {
  const groups = new Map<string, Entry>()
  const files: Entry[] = []
  const linked: Link[] = []
  const entries: Entry[] = []
  for (const row of live) {
    if (row.meta !== null && row.meta.kind !== 'file') { entries.push(row); continue }
    if (row.cid === null) continue
    const group = row.meta?.linkGroup == null ? undefined : `${row.deviceId} ${row.meta.linkGroup} ${row.cid}`
    const first = group === undefined ? undefined : groups.get(group)
    if (first !== undefined) { linked.push({ row, first }); continue }
    if (group !== undefined) groups.set(group, row)
    files.push(row)
  }
  return { files, linked, entries }
}

/**
 * Links whose first name was kept or failed (`kept` names `folder/path`) get a new first: the group's next
 * name, fetched itself. Answers the rows to fetch and the links left, pointing at their new first.
 */
export function promoteKeptFirsts (linked: readonly Link[], kept: ReadonlySet<string>): { rows: Entry[], linked: Link[] } {
  const leads = new Map<Entry, Entry>()
  const left: Link[] = []
  for (const link of linked) {
    if (!kept.has(`${link.first.folder}/${link.first.path}`)) { left.push(link); continue }
    const lead = leads.get(link.first)
    if (lead === undefined) leads.set(link.first, link.row)
    else left.push({ row: link.row, first: lead })
  }
  return { rows: [...leads.values()], linked: left }
}
