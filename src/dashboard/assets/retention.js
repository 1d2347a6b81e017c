// The dashboard's retention card: the last forget and prune (CLI runs included), what the account
// held and a prune would free, each with the time it was counted. Uses format.js's helpers; text only.
'use strict'

function objectsAndBytes (n) { return `${counted(n.objects, 'object', 'objects')} (${bytes(n.bytes)})` }

function retentionRows (r) {
  const f = r.lastForget
  const p = r.lastPrune
  const plan = r.plan
  const rows = [
    ['policy', r.enabled ? (r.running ? el('span', { class: 'warn' }, 'forget and prune running…') : 'forget and prune on [retention] schedule') : el('span', { class: 'muted' }, 'off: no [retention] in the config, every publish is kept')],
    r.lastError && ['last error', el('span', { class: 'bad' }, safe(r.lastError.message), ' ', when(r.lastError.at))],
    r.skipped && ['not run', el('span', { class: 'warn' }, safe(r.skipped))],
    ['last forget', f ? el('span', { class: 'forget' }, `kept ${counted(f.kept, 'publish', 'publishes')}, forgot ${count(f.forgotten)}, linked ${count(f.relinked)} anew · `, when(f.at)) : el('span', { class: 'muted' }, 'none yet')],
    ['last prune', p ? el('span', { class: 'prune' }, `deleted ${objectsAndBytes(p)} · `, when(p.at), p.refused ? el('div', { class: 'bad refused' }, `the service refused to delete ${objectsAndBytes(p.refused)}: ${safe(p.refused.reason)}; they stay, and the next prune asks again`) : null) : el('span', { class: 'muted' }, 'none yet')]
  ]
  if (plan) {
    // Counted figures, never current ones: each carries when, and by what.
    const by = plan.dryRun ? 'a dry run' : 'a prune'
    rows.push(['held', el('span', { class: 'held' }, `${objectsAndBytes(plan.held)} · counted by ${by} `, when(plan.at))])
    const margin = plan.young > 0 || plan.chainsHeld > 0 ? el('div', { class: 'muted' }, `kept for now, within prune_margin: ${counted(plan.young, 'object', 'objects')}${plan.chainsHeld > 0 ? ` and ${counted(plan.chainsHeld, 'forgotten chain', 'forgotten chains')}` : ''}`) : null
    const stale = f && f.forgotten > 0 && Date.parse(f.at) > Date.parse(plan.at) ? el('div', { class: 'warn stale' }, 'a forget ran after this count, so a prune may free more: cidsync prune --dry-run counts again') : null
    const again = r.planDueAt ? el('div', { class: 'muted' }, 'counted again ', when(r.planDueAt)) : null
    rows.push(['would free', el('span', { class: 'would-free' }, `${objectsAndBytes(plan.wouldFree)} · as of `, when(plan.at), margin, stale, again)])
  } else {
    rows.push(['held', el('span', { class: 'muted' }, 'not counted yet: a prune or cidsync prune --dry-run counts it')])
  }
  if (r.planError) rows.push(['count failed', el('span', { class: 'bad' }, safe(r.planError.message), ' ', when(r.planError.at))])
  return rows
}

// eslint-disable-next-line no-unused-vars
function renderRetention (s) {
  const r = s.retention
  const shown = Boolean(r) && (r.enabled || Boolean(r.lastForget || r.lastPrune || r.plan))
  $('#retention').hidden = !shown
  if (shown) defs($('#retention dl'), retentionRows(r))
}
