// The dashboard's finder: search as you type, a folder browser per device, a file's timeline.
// Asks GET /search, /browse, /log and /download with the tab's CSRF token (file names are private:
// a signed-in page only). Text only: names come from disk and other devices, never markup.
'use strict'

const finder = { seq: 0, controller: null, timer: null, device: '', prefix: '', at: '' }

// el(), bytes(), utc() and the rest of the page's helpers come from format.js, loaded before this file.

function ftime (iso) { return iso ? utc(iso) : '–' }

/** One GET with this tab's token: the answer's JSON, or an Error saying what to do. */
async function ask (path, signal) {
  const answer = await fetch(path, { cache: 'no-store', signal, headers: { 'x-cidsync-csrf': sessionStorage.getItem('cidsync-csrf') || '' } })
  if (answer.status === 401 || answer.status === 403) throw new Error('sign in to search: run `cidsync dashboard` and open the link it prints')
  const body = await answer.json().catch(() => ({}))
  if (!answer.ok) throw new Error(body.error || `the daemon answered ${answer.status}`)
  return body
}

/** A Download button for content that can be fetched; the daemon verifies it before sending. */
function downloadButton (path, extra) {
  return el('button', { type: 'button', class: 'download', 'data-download': path, 'data-device': extra.device, 'data-cid': extra.cid, 'data-at': extra.at }, 'Download')
}

function fetchable (stored, deleted) { return !deleted && stored !== undefined && stored !== 'local-only' }

/**
 * Fetches /download with the CSRF header (never in the URL) and hands the verified bytes to the
 * browser as a Blob: nothing is saved unless the daemon checked every byte against the CID.
 */
async function download (button) {
  const status = document.querySelector('#find-download')
  const path = button.dataset.download
  const params = new URLSearchParams({ path })
  for (const key of ['device', 'cid', 'at']) if (button.dataset[key]) params.set(key, button.dataset[key])
  button.disabled = true
  status.className = 'muted'
  status.textContent = `fetching and verifying ${path}…`
  try {
    const answer = await fetch(`/download?${params}`, { cache: 'no-store', headers: { 'x-cidsync-csrf': sessionStorage.getItem('cidsync-csrf') || '' } })
    if (!answer.ok) {
      const body = await answer.json().catch(() => ({}))
      throw new Error(`${body.error || `the daemon answered ${answer.status}`}${body.code ? ` [${body.code}]` : ''}${body.advice ? `: ${body.advice}` : ''}`)
    }
    const blob = await answer.blob()
    const url = URL.createObjectURL(blob)
    const a = el('a', { href: url, download: path.split('/').pop() || 'download' })
    document.body.append(a)
    a.click()
    a.remove()
    setTimeout(() => URL.revokeObjectURL(url), 60_000)
    status.textContent = `downloaded ${path} (${bytes(blob.size)}, verified against its CID)`
  } catch (err) {
    status.className = 'bad'
    status.textContent = err.message
  } finally {
    button.disabled = false
  }
}

function note (text, bad) {
  const p = document.querySelector('#find-note')
  p.textContent = text
  p.className = bad ? 'bad' : 'muted'
}

/** Results as you type: each keystroke cancels the request before it, and a late answer never overwrites a newer one. */
function searchSoon () {
  clearTimeout(finder.timer)
  finder.timer = setTimeout(search, 80)
}

async function search () {
  const q = document.querySelector('#find-q').value
  const body = document.querySelector('#find-results tbody')
  if (q === '') { body.replaceChildren(); note('', false); return }
  finder.controller?.abort()
  finder.controller = new AbortController()
  const mine = ++finder.seq
  const deleted = document.querySelector('#find-deleted').checked ? '&deleted=1' : ''
  try {
    const result = await ask(`/search?q=${encodeURIComponent(q)}${deleted}&limit=100`, finder.controller.signal)
    if (mine !== finder.seq) return
    body.replaceChildren(...result.results.map(r => el('tr', {},
      el('td', {}, el('span', { class: 'cid', title: r.device }, r.device.slice(0, 8))),
      el('td', { class: 'num' }, bytes(r.size)),
      el('td', {}, ftime(r.mtime)),
      el('td', {}, r.deleted ? 'deleted' : r.stored),
      el('td', {}, el('a', { href: '#', class: 'path', 'data-path': `${r.folder}/${r.path}` }, `${r.folder}/${r.path}`)),
      el('td', {}, fetchable(r.stored, r.deleted) ? downloadButton(`${r.folder}/${r.path}`, { device: r.device }) : ''))))
    note(`${result.results.length} result${result.results.length === 1 ? '' : 's'}${result.more ? ' (more match: type more of the name)' : ''}${result.complete ? '' : ' (the search cache is still being built: results so far)'}`, false)
    document.querySelector('#find-results').dataset.query = q
  } catch (err) {
    if (err.name === 'AbortError' || mine !== finder.seq) return
    body.replaceChildren()
    note(err.message, true)
  }
}

async function showLog (path) {
  const section = document.querySelector('#find-log')
  section.hidden = false
  document.querySelector('#find-log-path').textContent = path
  const body = document.querySelector('#find-log tbody')
  body.replaceChildren()
  try {
    const result = await ask(`/log?path=${encodeURIComponent(path)}`)
    body.replaceChildren(...result.versions.map(v => el('tr', {},
      el('td', {}, ftime(v.at)),
      el('td', {}, el('span', { class: 'cid', title: v.deviceId }, `${v.deviceId.slice(0, 8)} ${v.hostname}`)),
      el('td', { class: 'num' }, v.deleted ? '' : bytes(v.size)),
      el('td', {}, v.deleted ? '(deleted)' : el('span', { class: 'cid' }, v.cid || '')),
      el('td', {}, v.deleted ? '' : v.fetchable ? `yes (${v.stored})` : `no (${v.stored})`),
      el('td', {}, v.fetchable && v.cid ? downloadButton(path, { cid: v.cid }) : ''))))
    document.querySelector('#find-log-note').textContent = `${result.versions.length} version(s), from the index and ${result.publishesKept} publish(es) of history kept (\`cidsync log\` fetches the rest)`
  } catch (err) {
    document.querySelector('#find-log-note').textContent = err.message
  }
}

async function browseTo (device, prefix) {
  finder.device = device
  finder.prefix = prefix
  const list = document.querySelector('#browse-list')
  const publish = document.querySelector('#browse-publish')
  if (finder.at !== '') publish.textContent = 'fetching that publish (once; kept after)…'
  try {
    const result = await ask(`/browse?prefix=${encodeURIComponent(prefix)}${device ? `&device=${encodeURIComponent(device)}` : ''}${finder.at ? `&at=${encodeURIComponent(finder.at)}` : ''}`)
    publish.textContent = result.publish ? `as publish ${result.publish.cid} (${ftime(result.publish.at)}, device ${result.publish.device.slice(0, 8)}) saw it` : ''
    const select = document.querySelector('#browse-device')
    if (select.options.length !== result.devices.length) {
      select.replaceChildren(...result.devices.map(d => el('option', { value: d.id }, `${d.id.slice(0, 8)} ${d.hostname}`)))
    }
    if (result.deviceId) select.value = result.deviceId
    finder.device = result.deviceId || ''
    const crumbs = [el('a', { href: '#', 'data-prefix': '' }, 'folders')]
    const parts = prefix.split('/').filter(Boolean)
    parts.forEach((part, i) => crumbs.push(' / ', el('a', { href: '#', 'data-prefix': `${parts.slice(0, i + 1).join('/')}/` }, part)))
    document.querySelector('#browse-crumbs').replaceChildren(...crumbs)
    list.replaceChildren(
      ...result.dirs.map(d => el('li', {}, el('a', { href: '#', 'data-prefix': `${prefix}${d.name}/` }, `${d.name}/`), el('span', { class: 'muted' }, ` ${d.files} files, ${bytes(d.bytes)}`))),
      ...result.files.map(f => el('li', {}, el('a', { href: '#', class: 'path', 'data-path': `${prefix}${f.name}` }, f.name), el('span', { class: 'muted' }, ` ${bytes(f.size)}, ${ftime(f.mtime)} `),
        fetchable(f.stored, false) ? downloadButton(`${prefix}${f.name}`, { device: finder.device, at: finder.at ? finder.at : undefined }) : '')))
    if (result.truncated) list.append(el('li', { class: 'muted' }, 'more files here than shown: use the search'))
  } catch (err) {
    publish.textContent = ''
    list.replaceChildren(el('li', { class: 'bad' }, err.message))
  }
}

function wireFinder () {
  document.querySelector('#find-q').addEventListener('input', searchSoon)
  document.querySelector('#find-deleted').addEventListener('change', searchSoon)
  document.querySelector('#browse-device').addEventListener('change', event => browseTo(event.currentTarget.value, ''))
  document.querySelector('#browse-at').addEventListener('change', event => { finder.at = event.currentTarget.value.trim(); browseTo(finder.device, '') })
  document.querySelector('#find').addEventListener('click', event => {
    const button = event.target.closest('button.download')
    if (button !== null) { void download(button); return }
    const link = event.target.closest('a')
    if (link === null) return
    event.preventDefault()
    if (link.dataset.path !== undefined) showLog(link.dataset.path)
    else if (link.dataset.prefix !== undefined) browseTo(finder.device, link.dataset.prefix)
  })
  if (sessionStorage.getItem('cidsync-csrf')) browseTo('', '')
  else note('Sign in to search: run `cidsync dashboard` and open the link it prints.', false)
}

wireFinder()
