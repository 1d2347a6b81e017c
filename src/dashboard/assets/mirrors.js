// The dashboard's mirrors section: each [[mirrors]] table's lag, last publish there, errors with
// what to do, and its own restore drill. Uses app.js's helpers (el, when, shortCid, count, $); text only.
'use strict'

function lagOf (m) {
  const missing = m.unavailable ? m.unavailable.count : 0
  if (m.objectsBehind === 0 && m.publishesBehind === 0) return missing === 0 ? el('span', { class: 'ok' }, 'caught up') : el('span', { class: 'bad' }, `${missing} ${missing === 1 ? 'object' : 'objects'} missing (the primary no longer gives them)`)
  const s = m.lagSeconds
  const age = s < 60 ? `${s} s` : s < 3600 ? `${Math.round(s / 60)} min` : `${Math.round(s / 360) / 10} h`
  return el('span', { class: m.lagging ? 'bad' : 'warn' }, `oldest waiting ${age}${m.lagging ? ` (past ${m.maxLagSeconds} s)` : ''}`)
}

// As `cidsync status` (mirror-lines.ts): a message that already names the advice's commands (a
// credential to sign in again) gets no second "what to do" naming them again.
function saysAlready (message, advice) {
  const commands = [...String(advice || '').matchAll(/`([^`]+)`/g)].map(m => m[1])
  return commands.length > 0 && commands.every(c => String(message).includes(c))
}

function mirrorRestorable (m) {
  const r = m.restorable
  if (!r) return el('span', { class: 'muted' }, `not checked yet (cidsync verify --mirror ${m.name})`)
  return r.ok ? el('span', { class: 'ok' }, 'yes ', when(r.checkedAt)) : el('span', { class: 'bad' }, `NO: ${r.failed || 'the drill failed'}`)
}

// eslint-disable-next-line no-unused-vars
function renderMirrors (s) {
  const mirrors = Array.isArray(s.mirrors) ? s.mirrors : []
  $('#mirrors').hidden = mirrors.length === 0
  $('#mirrors tbody').replaceChildren(...mirrors.map(m => el('tr', { 'data-mirror': m.name },
    el('td', { 'data-label': 'mirror', title: m.endpoint }, m.name),
    el('td', { class: 'num behind', 'data-label': 'objects behind' }, count(m.objectsBehind)),
    el('td', { class: 'num', 'data-label': 'publishes behind' }, count(m.publishesBehind)),
    el('td', { class: 'lag', 'data-label': 'lag' }, lagOf(m)),
    el('td', { 'data-label': 'last publish there' }, m.lastPublish ? el('span', {}, shortCid(m.lastPublish.cid), ' ', when(m.lastPublish.at)) : el('span', { class: 'muted' }, 'none yet')),
    el('td', { class: 'restorable', 'data-label': 'restorable' }, mirrorRestorable(m)))))
  const problems = []
  for (const m of mirrors) {
    if (m.lastError) {
      problems.push(el('li', { 'data-mirror': m.name }, el('span', { class: 'bad' }, `${m.name}: copying failed`), ' ', when(m.lastError.at),
        m.lastError.code ? el('code', {}, ` [${m.lastError.code}]`) : null, el('div', {}, m.lastError.message),
        saysAlready(m.lastError.message, m.lastError.advice) ? null : el('p', { class: 'fix muted' }, `what to do: ${m.lastError.advice}`), m.retryAt ? el('p', { class: 'muted' }, 'next try ', when(m.retryAt)) : null))
    }
    if (m.pointer) {
      problems.push(el('li', { 'data-mirror': m.name }, el('span', { class: m.pointer.state === 'ahead' ? 'bad' : 'warn' }, `${m.name}: pointer ${m.pointer.state}`),
        el('code', {}, ` [${m.pointer.code}]`), el('div', {}, m.pointer.message)))
    }
  }
  $('#mirrors .problems').replaceChildren(...problems)
}
