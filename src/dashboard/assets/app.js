// The cidsync dashboard: reads /status and (signed in) presses the daemon's buttons; events.js
// follows /events. Plain DOM, text only (never innerHTML: file names and messages come from outside).
'use strict'

const HISTORY_PAGE = 10

// firstRefresh: the first read of /status (events.js opens the stream after it).
const state = { status: null, session: { signedIn: false }, historyPage: 0, refreshTimer: null, refreshing: false, again: false, firstRefresh: null }

/** What to do about an error, from its code or its words (the troubleshooting table of docs/operations.md). */
function fixFor (code, text) {
  const t = `${code || ''} ${text || ''}`
  if (/inotify|ERR_WATCH_LIMIT/.test(t)) return 'raise fs.inotify.max_user_watches (sudo sysctl fs.inotify.max_user_watches=524288), then restart cidsync'
  if (/empty directory|unmounted/.test(t)) return 'mount the disk again; it is scanned and watched again without a restart'
  if (/does not exist|ENOENT/.test(t)) return 'mount or create the folder: it is picked up without a restart; or remove it from the config and reload'
  if (/EACCES|EPERM|permission/i.test(t)) return 'give cidsync read access: it is picked up without a restart'
  if (/ERR_REMOTE_UNAUTHORIZED|401/.test(t)) return 'run cidsync login (or set a new CIDSYNC_API_KEY): it is picked up without a restart'
  if (/session token expire/.test(t)) return 'copy a new session token into session-token beside the config'
  if (/ERR_PUBLISH_HELD/.test(t)) return 'bring the folder back, or cidsync snapshot --confirm-drop if the files are really gone'
  if (/ERR_POINTER_UNREADABLE/.test(t)) return 'cidsync pointer repair'
  if (/full|ENOSPC|ERR_INDEX_WRITE/.test(t)) return 'free space on the disk holding the state dir; it catches up on its own'
  if (/ERR_REMOTE_NETWORK|ECONNREFUSED|timed out|deadline/.test(t)) return 'nothing: it is tried again; check the service if it persists'
  return 'see the troubleshooting table in docs/operations.md'
}

function stateBadge (stateName) {
  const kind = stateName === 'watching' ? 'ok' : stateName === 'error' || stateName === 'degraded' ? 'bad' : 'warn'
  return el('span', { class: `badge ${kind}` }, stateName)
}

function renderHeader (s) {
  $('#device').textContent = `${s.device.hostname} · ${s.device.id.slice(0, 8)} · v${s.version}`
  document.title = `cidsync · ${s.device.hostname}`
}

function renderFolders (s) {
  const rows = s.folders.map(f => {
    // toHash: files waiting for or in hashing now; hashed: done since start.
    const stateCell = el('td', {}, stateBadge(f.state),
      f.scan.toHash > 0 ? el('div', {}, el('progress', { max: f.scan.hashed + f.scan.toHash, value: f.scan.hashed }), ` ${count(f.scan.toHash)} to hash`) : null,
      f.skipped > 0 ? el('div', { class: 'warn' }, `${count(f.skipped)} skipped`) : null,
      f.error ? el('div', { class: 'bad' }, f.error, el('p', { class: 'fix muted' }, `what to do: ${fixFor(null, f.error)}`)) : null)
    const row = el('tr', { 'data-folder': f.name }, el('td', {}, f.name, el('div', { class: 'muted' }, el('code', {}, f.path))), stateCell,
      el('td', { class: 'num entries' }, count(f.files)), el('td', { class: 'num' }, bytes(f.bytes)))
    // skipped.js: the skipped paths, each with why and what to do, in a row of their own.
    return [row, typeof skippedRow === 'function' ? skippedRow(f) : null].filter(Boolean)
  }).flat()
  $('#folders tbody').replaceChildren(...(rows.length > 0 ? rows : [el('tr', {}, el('td', { colspan: 4, class: 'muted' }, 'no folders configured'))]))
}

function renderPublish (s) {
  const p = s.publish
  if (!p) {
    defs($('#publish dl'), [['state', s.service.error ? el('span', { class: 'bad' }, `service not reached: ${s.service.error}`) : 'waiting for the index to be current and the service to be reached']])
    return
  }
  const pointer = p.pointer.inSync ? el('span', { class: 'ok' }, 'in sync') : el('span', { class: 'warn' }, `not in sync: ${p.pointer.why}`)
  defs($('#publish dl'), [
    ['last', p.last ? el('span', {}, shortCid(p.last.cid), ' · ', `${count(p.last.entries)} ${p.last.entries === 1 ? 'entry' : 'entries'} · `, when(p.last.at)) : 'nothing published yet'],
    p.running && ['now', el('span', { class: 'warn' }, 'publishing…')],
    p.pendingAt && ['next', el('span', {}, 'after changes, ', when(p.pendingAt))],
    ['pointer', el('span', {}, shortCid(p.pointer.cid), ' ', pointer)],
    ['IPNS name', ipnsName(p.ipns)],
    p.held && ['held', el('span', { class: 'bad' }, p.held.message)],
    p.blocked && ['stopped', el('span', { class: 'bad' }, p.blocked, el('p', { class: 'fix muted' }, `what to do: ${fixFor(null, p.blocked)}`))],
    p.lastError && ['last error', el('span', { class: 'bad' }, p.lastError.message, ' ', when(p.lastError.at))],
    p.retryAt && ['retry', when(p.retryAt)],
    ['runs', `${count(p.runs)} (${count(p.failures)} failed)`]
  ])
}

/** The IPNS name snapshots are published to (`[snapshot] ipns_key`), or why there is none yet. */
function ipnsName (ipns) {
  if (!ipns) return el('span', { class: 'muted' }, 'none ([snapshot] ipns_key is not set)')
  if (!ipns.name) return el('span', { class: 'muted' }, 'a key is made at the next publish (ipns_key = "auto")')
  // Shortened like a CID; the whole id is in its title (and in `cidsync status`).
  const id = ipns.id ? el('code', { class: 'ipns-id', title: `/ipns/${ipns.id}` }, `/ipns/${ipns.id.length > 20 ? `${ipns.id.slice(0, 10)}…${ipns.id.slice(-6)}` : ipns.id}`) : null
  const key = el('span', { class: 'muted', title: ipns.name }, `key ${ipns.name.slice(0, 8)}…`)
  const name = id ? el('span', {}, id, ' ', key) : key
  return ipns.cid ? el('span', {}, name, ' → ', shortCid(ipns.cid), ' ', when(ipns.at)) : el('span', {}, name, el('span', { class: 'muted' }, ', published to at the next publish'))
}

function renderRestorable (s) {
  const r = s.restorable
  const body = $('#restorable .body')
  if (!r) {
    body.replaceChildren(el('span', { class: 'muted' }, 'not checked yet'))
    return
  }
  body.replaceChildren(r.ok
    ? el('span', { class: 'ok' }, 'yes: the last drill restored the pointer\'s snapshot')
    : el('span', { class: 'bad' }, `no: ${r.failed || 'the last drill failed'}`), el('div', { class: 'muted' }, 'checked ', when(r.checkedAt)))
}

function renderHistory (s) {
  const history = Array.isArray(s.history) ? s.history : []
  const pages = Math.max(1, Math.ceil(history.length / HISTORY_PAGE))
  state.historyPage = Math.min(state.historyPage, pages - 1)
  const shown = history.slice(state.historyPage * HISTORY_PAGE, (state.historyPage + 1) * HISTORY_PAGE)
  // data-label: a phone shows each row as a card of labelled lines (style.css).
  $('#history tbody').replaceChildren(...shown.map(h => el('tr', {},
    el('td', { 'data-label': 'time' }, when(h.at)), el('td', { 'data-label': 'device' }, [h.device ? h.device.slice(0, 8) : '', h.hostname || ''].filter(Boolean).join(' ') || '–'),
    el('td', { class: 'num', 'data-label': 'entries' }, count(h.entries)), el('td', { class: 'num', 'data-label': 'bytes added' }, bytes(h.bytesAdded)),
    el('td', { 'data-label': 'snapshot' }, shortCid(h.cid)), el('td', { 'data-label': 'deal' }, h.deal && h.deal !== 'none' ? String(h.deal) : '–'))))
  $('#history .empty').hidden = history.length > 0
  $('#history .pager').hidden = history.length <= HISTORY_PAGE
  $('#history .page').textContent = `page ${state.historyPage + 1} of ${pages}`
  $('#history .newer').disabled = state.historyPage === 0
  $('#history .older').disabled = state.historyPage >= pages - 1
}

function renderDeals (s) {
  const r = s.reconcile
  if (!r) { defs($('#deals dl'), [['deals', 'not reconciled yet']]); return }
  defs($('#deals dl'), [
    ['pending', count(r.deals.pending)],
    ['active', count(r.deals.made)],
    ['overdue', r.deals.overdue > 0 ? el('span', { class: 'bad' }, `${count(r.deals.overdue)} (older than two days: cidsync deal status CID)`) : '0']
  ])
}

/** Files' content (folders with store = true): protected, pending, failed; the failed files with why and what to do. */
function renderContent (s) {
  const c = s.content
  const section = $('#content')
  if (!c) {
    $('#content .summary').textContent = 'waiting for the service to be reached'
    $('#content tbody').replaceChildren()
    $('#content .failures').replaceChildren()
    return
  }
  if (c.folders.length === 0) {
    $('#content .summary').textContent = 'no folder stores its files\' content (set store = true on a [[folders]] entry): the index alone is kept'
  } else {
    $('#content .summary').replaceChildren(c.running ? 'storing now · ' : 'idle · ', `upload rate ${bytes(c.uploadRate)}/s · ${bytes(c.storedBytesTotal)} uploaded since start · ${bytes(c.savedByDedup)} saved by dedup · last pass `, when(c.lastRun))
  }
  section.classList.toggle('failing', c.failingTooLong === true)
  $('#content tbody').replaceChildren(...c.folders.map(f => el('tr', { 'data-folder': f.folder }, el('td', {}, f.folder),
    el('td', { class: 'num protected' }, count(f.protected.files)), el('td', { class: 'num' }, bytes(f.protected.bytes)),
    el('td', { class: 'num pending' }, count(f.pending.files)), el('td', { class: 'num' }, bytes(f.pending.bytes)),
    el('td', { class: `num failed${f.failed > 0 ? ' bad' : ''}` }, count(f.failed)))))
  const failures = c.failures.slice(0, 20).map(f => el('li', {}, el('span', { class: 'bad' }, safe(`${f.folder}/${f.path}`)), el('code', {}, ` [${f.code}]`), ' failed since ', when(f.since),
    el('div', {}, f.message), el('p', { class: 'fix muted' }, `what to do: ${f.advice || 'it is tried again'}`)))
  if (c.failures.length > 20) failures.push(el('li', { class: 'muted' }, `${count(c.failures.length - 20)} more: cidsync status --json lists them all`))
  if (c.failingTooLong) failures.unshift(el('li', { class: 'bad' }, 'uploads have failed for longer than the bound: cidsync status --check fails until they go through'))
  $('#content .failures').replaceChildren(...failures)
}

function renderAccount (s) {
  const a = s.account
  const r = s.reconcile
  defs($('#account dl'), [
    ['stored', a ? count(a.stored) : '–'],
    ['sent for deal', a ? count(a.sentForDeal) : '–'],
    ['local only', a ? count(a.localOnly) : '–'],
    ['counted', a ? when(a.countedAt) : 'after the first reconciliation'],
    r && ['uploads', `${count(r.remoteFiles)} on the account (${count(r.gone)} gone)`],
    r && ['reconciled', r.running ? 'running…' : when(r.lastRun)],
    r && r.lastError && ['last error', el('span', { class: 'bad' }, r.lastError.message)]
  ])
}

// The same error again is listed once by the daemon, with how many times and since when (the time shown is the last).
function repeats (e) {
  return e.count > 1 ? el('span', { class: 'repeats muted' }, ` ×${count(e.count)} since `, when(e.firstAt)) : null
}

function renderErrors (s) {
  const list = [...s.lastErrors].reverse()
  if (s.index.writeState !== 'ok' && s.index.lastError) list.unshift({ at: s.index.lastError.at, message: 'index writes failing', code: s.index.lastError.code, detail: s.index.lastError.message })
  $('#errors .current').replaceChildren(...(list.length > 0
    ? list.map(e => el('li', {}, when(e.at), ' ', el('span', { class: 'bad' }, e.message), e.code ? el('code', {}, ` [${e.code}]`) : null, repeats(e),
      e.detail ? el('div', {}, e.detail) : null, el('p', { class: 'fix muted' }, `what to do: ${fixFor(e.code, e.detail || e.message)}`)))
    : [el('li', { class: 'muted' }, 'none')]))
  // Errors that went away (what they were about worked again): apart, so they do not read as current.
  const resolved = [...(s.resolvedErrors || [])].reverse()
  $('#errors .resolved').hidden = resolved.length === 0
  $('#errors .resolved summary').textContent = `${count(resolved.length)} resolved recently`
  $('#errors .resolved ul').replaceChildren(...resolved.map(e => el('li', {}, when(e.at), ' ', e.message, e.code ? el('code', {}, ` [${e.code}]`) : null, repeats(e),
    el('span', { class: 'ok' }, ' resolved '), when(e.resolvedAt))))
}

function render () {
  const s = state.status
  if (!s) return
  renderHeader(s)
  // glance.js: the one-glance line on top.
  if (typeof renderGlance === 'function') renderGlance(s)
  renderFolders(s)
  renderPublish(s)
  renderRestorable(s)
  renderHistory(s)
  renderDeals(s)
  renderAccount(s)
  renderContent(s)
  // mirrors.js (loaded before this script, so the first render has it; absent, the section stays hidden).
  if (typeof renderMirrors === 'function') renderMirrors(s)
  if (typeof renderRetention === 'function') renderRetention(s)
  renderErrors(s)
}

async function refresh () {
  if (state.refreshing) { state.again = true; return }
  state.refreshing = true
  try {
    const answer = await fetch('/status', { cache: 'no-store' })
    if (answer.ok) { state.status = await answer.json(); render() }
  } catch {
    // The daemon is restarting: the event stream says so and reconnects; the next event refreshes.
  } finally {
    state.refreshing = false
    if (state.again) { state.again = false; scheduleRefresh() }
  }
}

/** Events come in bursts (a scan): read /status at most every 300 ms. */
function scheduleRefresh () {
  if (state.refreshTimer !== null) return
  state.refreshTimer = setTimeout(() => { state.refreshTimer = null; refresh() }, 300)
}

/** The CSRF token arrives once, in the login redirect's fragment, and stays in this tab (sessionStorage is per origin, port included). */
function takeCsrfFromFragment () {
  const match = /^#csrf=([\w-]+)$/.exec(location.hash)
  if (match === null) return
  sessionStorage.setItem('cidsync-csrf', match[1])
  history.replaceState(null, '', location.pathname)
}

async function loadSession () {
  try {
    const answer = await fetch('/session', { cache: 'no-store' })
    state.session = answer.ok ? await answer.json() : { signedIn: false }
  } catch {
    state.session = { signedIn: false }
  }
  state.session.csrf = sessionStorage.getItem('cidsync-csrf') || ''
  // Signed in, but not in this tab (no token here): read only until the link is opened here.
  if (state.session.signedIn === true && state.session.csrf === '') state.session.signedIn = false
  const signedIn = state.session.signedIn === true
  for (const id of ['#publish-now', '#reconcile-now', '#verify-now']) $(id).disabled = !signedIn
  $('#signin').textContent = signedIn ? 'signed in' : 'read only'
  $('#action-hint').textContent = signedIn ? '' : 'Read only: to use the buttons, run `cidsync dashboard` and open the link it prints.'
  // How to sign in, said only to a page that is not (a signed-in page was told to sign in).
  $('#signin-help').hidden = signedIn
}

/** What a button's answer means, in words: what was published, reconciled or checked, or what failed. */
function describeAnswer (path, ok, body, text) {
  if (!ok) {
    if (body && body.error) return `${body.error}${body.code ? ` [${body.code}]` : ''}`
    return text.trim() || 'no answer'
  }
  if (!body) return text.trim()
  if (path === '/snapshot') {
    const what = body.skipped ? `nothing new here since the last snapshot, ${body.cid}` : `published ${body.cid}`
    return `${what} (${count(body.entries)} ${body.entries === 1 ? 'entry' : 'entries'}${body.merged > 0 ? `, merged ${count(body.merged)} from other devices` : ''})`
  }
  if (path === '/reconcile') return `${count(body.remoteFiles)} uploads on the account, ${count(body.gone)} gone, ${count(body.dealsMade)} deals made${body.republished ? '; the IPNS name was put back on the last snapshot' : ''}`
  if (path === '/verify') {
    return body.restorable
      ? `restorable: ${body.cid} and its ${counted(body.segments, 'segment', 'segments')} fetched, verified and opened`
      : `NOT restorable: ${body.failed ? `${body.failed.cid}: ${body.failed.message}` : 'the drill failed'}`
  }
  return text.trim()
}

async function press (button, path, label) {
  const result = $('#action-result')
  button.disabled = true
  result.hidden = false
  result.textContent = `${label}…`
  result.className = ''
  try {
    const answer = await fetch(path, { method: 'POST', headers: { 'x-cidsync-csrf': state.session.csrf || '' } })
    const text = await answer.text()
    let body = null
    try { body = JSON.parse(text) } catch {}
    const failed = !answer.ok || (path === '/verify' && body && body.restorable === false)
    result.textContent = `${label}: ${answer.ok ? 'done' : 'failed'}: ${describeAnswer(path, answer.ok, body, text)}`
    result.className = failed ? 'bad' : 'ok'
    if (answer.status === 401 || answer.status === 403) loadSession()
  } catch (err) {
    result.textContent = `${label}: the daemon could not be reached (${err.message})`
    result.className = 'bad'
  } finally {
    button.disabled = state.session.signedIn !== true
    refresh()
  }
}

function wire () {
  $('#publish-now').addEventListener('click', event => press(event.currentTarget, '/snapshot', 'publish'))
  $('#reconcile-now').addEventListener('click', event => press(event.currentTarget, '/reconcile', 'reconcile'))
  $('#verify-now').addEventListener('click', event => press(event.currentTarget, '/verify', 'verify'))
  $('#history .newer').addEventListener('click', () => { state.historyPage = Math.max(0, state.historyPage - 1); render() })
  $('#history .older').addEventListener('click', () => { state.historyPage++; render() })
  // Relative times age: redraw once a minute even when nothing happens.
  setInterval(render, 60_000)
}

wire()
takeCsrfFromFragment()
loadSession()
state.firstRefresh = refresh()
