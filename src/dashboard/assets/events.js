// The live events: what /events streams, newest first. Opened once the page has loaded, from the
// last event /status had seen less a backlog, so the list starts with what happened lately.
'use strict'

const ACTIVITY_KEEP = 50
/** Events from before the page opened that it asks for (scan progress among them is not listed). */
const BACKLOG = 200
/** Quiet after load before the stream opens: a headless browser waiting for the network to go idle (500 ms) gets it. */
const QUIET_MS = 1000
const EVENT_TYPES = ['watcher.state', 'folder.state', 'scan.progress', 'index.batch', 'publish.started', 'publish.step',
  'publish.done', 'publish.failed', 'merge', 'reconcile.done', 'reconcile.failed', 'deals', 'drill', 'error', 'mirror']

const live = { source: null, lastId: 0, pid: null }

function describeEvent (type, d) {
  switch (type) {
    case 'index.batch': return `${d.rows} row${d.rows === 1 ? '' : 's'} written`
    case 'folder.state': return `${d.folder}: ${d.state}${d.error ? ` (${d.error})` : ''}`
    case 'scan.progress': return `${d.folder}: ${d.toHash} to hash, ${d.hashed} hashed`
    case 'publish.done': return `published ${d.cid} (${d.entries} entries${d.skipped ? ', nothing new' : ''})`
    case 'publish.failed': return `publish failed: ${d.message}`
    case 'publish.step': return `publish step ${d.step}`
    case 'publish.started': return `publish started (${d.reason})`
    case 'deals': return `deals: ${d.pending} pending, ${d.active} active, ${d.overdue} overdue`
    case 'merge': return `merged another device's snapshot (${d.merges} so far in this publish)`
    case 'reconcile.done': return `reconciled: ${d.remoteFiles} uploads on the account, ${d.gone} gone`
    case 'reconcile.failed': return `reconcile failed: ${d.message}`
    case 'watcher.state': return `watcher ${d.state}`
    // `failed` is the daemon's words for what failed (a string), or null.
    case 'drill': return d.ok ? `restore drill: ${d.cid} restores (${counted(d.segments, 'segment', 'segments')})` : `restore drill: NOT restorable: ${d.failed || d.cid}`
    case 'mirror': return `mirror ${d.mirror}: ${d.what === 'published' ? `pointer moved to ${d.cid}` : d.what === 'recovered' ? 'copying works again' : d.message || d.what}`
    case 'error': return `${d.message}${d.detail ? `: ${d.detail}` : ''}`
    default: return JSON.stringify(d)
  }
}

function noteEvent (type, data, id) {
  // The backlog and a browser's own resume can both send an event: each is listed once.
  const n = Number(id)
  if (n > 0) {
    if (n <= live.lastId) return
    live.lastId = n
  }
  if (type === 'scan.progress') return
  const list = $('#activity ol')
  list.prepend(el('li', { 'data-type': type }, clock(data.at), ' ', el('code', {}, type), ' ', safe(describeEvent(type, data)), id ? el('span', { class: 'muted' }, ` #${id}`) : null))
  while (list.children.length > ACTIVITY_KEEP) list.lastElementChild.remove()
  $('#activity .empty').hidden = true
}

function follow () {
  if (live.source !== null) return
  const seen = state.status && state.status.events ? state.status.events.lastId : 0
  const source = live.source = new EventSource(`/events?lastEventId=${Math.max(0, seen - BACKLOG)}`)
  const badge = $('#live')
  source.addEventListener('hello', message => {
    let hello = {}
    try { hello = JSON.parse(message.data) } catch {}
    // A daemon started again numbers its events from 1: what it sends is new, whatever its id.
    if (live.pid !== null && hello.pid !== live.pid) live.lastId = 0
    live.pid = hello.pid
    badge.textContent = 'live'
    badge.className = 'badge ok'
  })
  source.addEventListener('resync', () => refresh())
  source.onerror = event => {
    // The daemon's own `error` events arrive here too (SSE names them like a lost connection): they are news, not a disconnect.
    if (event instanceof MessageEvent) return
    badge.textContent = 'reconnecting…'
    badge.className = 'badge warn'
  }
  for (const type of EVENT_TYPES) {
    source.addEventListener(type, message => {
      let data = {}
      try { data = JSON.parse(message.data) } catch {}
      noteEvent(type, data, message.lastEventId)
      scheduleRefresh()
    })
  }
}

// A stream open while the page loads keeps it from ever finishing: a headless browser waiting for
// the network to go quiet (to take a screenshot) would wait forever. So: after load, after the
// first /status (whose last event id the backlog counts from), after a quiet moment.
function followAfterLoad () {
  const start = () => { Promise.resolve(state.firstRefresh).finally(() => setTimeout(follow, QUIET_MS)) }
  if (document.readyState === 'complete') start()
  else window.addEventListener('load', start, { once: true })
}

followAfterLoad()
