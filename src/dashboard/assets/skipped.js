// A folder's skipped paths, behind its "N skipped": each with why, since when and what to do, names
// neutralised, the first few listed and the rest counted. Uses format.js's helpers; text only.
'use strict'

const SKIPPED_LISTED = 20
/** Folders whose list is open: a redraw (every event) must not close it under the reader. */
const skippedOpen = new Set()

function skippedItem (p) {
  return el('li', {}, el('code', { class: 'path' }, `${safe(p.path)}${p.kind === 'dir' ? '/' : ''}`), ' ', el('code', {}, `[${p.reason}]`),
    ' since ', when(p.since), p.nextRetryAt ? [` · ${counted(p.retries, 'retry', 'retries')}, next `, when(p.nextRetryAt)] : ' · not retried',
    el('p', { class: 'fix muted' }, `what to do: ${p.advice || 'see the troubleshooting table in docs/operations.md'}`))
}

// eslint-disable-next-line no-unused-vars
function skippedRow (f) {
  if (!(f.skipped > 0)) return null
  const listed = (f.skippedFiles || []).slice(0, SKIPPED_LISTED)
  const items = listed.map(skippedItem)
  const rest = f.skipped - listed.length
  if (rest > 0) items.push(el('li', { class: 'more muted' }, `${count(rest)} more not listed here (\`cidsync status --json\` lists up to 100 a folder)`))
  const details = el('details', { open: skippedOpen.has(f.name) },
    el('summary', { class: 'warn' }, `${counted(f.skipped, 'path', 'paths')} skipped in ${f.name}: not indexed, so not protected`), el('ul', {}, items))
  details.addEventListener('toggle', () => { if (details.open) skippedOpen.add(f.name); else skippedOpen.delete(f.name) })
  return el('tr', { class: 'skipped', 'data-skipped': f.name }, el('td', { colspan: 4 }, details))
}
