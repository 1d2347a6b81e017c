import type { Entry } from '../../index/index.js'

/**
 * Links whose first name was kept or failed (`kept` names `folder/path`) get a new first: the group's next
 * name, fetched itself. Answers the rows to fetch and the links left, pointing at their new first.
 */
export function promoteKeptFirsts (linked: ReadonlyArray<{ row: Entry, first: Entry }>, kept: ReadonlySet<string>): { rows: Entry[], linked: Array<{ row: Entry, first: Entry }> } {
  const leads = new Map<Entry, Entry>()
  const left: Array<{ row: Entry, first: Entry }> = []
  for (const link of linked) {
    if (!kept.has(`${link.first.folder}/${link.first.path}`)) { left.push(link); continue }
    const lead = leads.get(link.first)
    if (lead === undefined) leads.set(link.first, link.row)
    else left.push({ row: link.row, first: lead })
  }
  return { rows: [...leads.values()], linked: left }
}
