import type { Glance, GlanceLevel, StatusDocument } from './status-document.js'

interface Part { readonly level: GlanceLevel, readonly text: string, readonly todo?: string }

type Input = Omit<StatusDocument, 'glance'>

const count = (n: number): string => n.toLocaleString('en-US')
const some = (n: number, one: string, many: string): string => `${count(n)} ${n === 1 ? one : many}`
const files = (n: number): string => some(n, 'file', 'files')
/** What a mirror still waits for: its objects, its publishes' pointer moves, or both. */
const behindOf = (m: { readonly objectsBehind: number, readonly publishesBehind: number }): string =>
  [m.objectsBehind > 0 ? some(m.objectsBehind, 'object', 'objects') : '', m.publishesBehind > 0 ? some(m.publishesBehind, 'publish', 'publishes') : '']
    .filter(part => part !== '').join(' and ') + ' behind'
const red = (text: string, todo: string): Part => ({ level: 'red', text, todo })
const amber = (text: string, todo: string): Part => ({ level: 'amber', text, todo })

/** What stops files from being protected, worst first: undefined when nothing does. */
function filesProblem (s: Input): Part | undefined {
  if (s.index.writeState !== 'ok') return red('changes are not written to the index', s.index.lastError?.message ?? 'free space on the disk holding the state dir')
  const broken = s.folders.filter(f => f.error !== null || f.state === 'error')
  if (broken.length > 0) return red(`${broken.length === 1 ? `folder ${broken[0]?.name ?? ''} is` : `${broken.length} folders are`} not watched`, broken[0]?.error ?? 'see Folders')
  if (s.service.error !== null) return red('the service cannot be reached', s.service.error)
  const p = s.publish
  if (p === null) return s.watcher.currentAt === null ? undefined : amber('the service is not reached yet', 'nothing: it is reached once the index is current')
  if (p.blocked !== null) return red('publishing is stopped', p.blocked)
  if (p.held != null) return red('publishing is held', p.held.message)
  if (p.pointerProblem != null) return red('the pointer cannot be used', p.pointerProblem)
  if (p.pointer.setBack) return red('the pointer was set back', 'publish now (Publish now, or `cidsync snapshot`)')
  if (p.lastError !== null && (p.last?.at == null || p.lastError.at > p.last.at)) return red('the last publish failed', p.lastError.message)
  // As `status --check` fails for it: a token that expires soon and that nothing renews.
  if (s.auth?.sessionToken.problem != null) return red('publishing stops soon', s.auth.sessionToken.problem)
  const c = s.content
  if (c?.failingTooLong === true) return red(`${files(c.failures.length)} failed to upload for too long`, c.failures[0]?.advice ?? 'check the service')
  return undefined
}

/** What is on its way (or unseen) before every file is protected. */
function filesPending (s: Input): Part | undefined {
  if (s.watcher.currentAt === null) {
    const toHash = s.folders.reduce((n, f) => n + f.scan.toHash, 0)
    return amber(`the folders are being indexed (${files(toHash)} to hash)`, 'nothing: wait for the first scan to finish')
  }
  // A link not followed or a FIFO is listed as skipped too, but has no content to lose.
  const lost = s.folders.reduce((n, f) => n + f.skipped - (f.skippedWithoutContent ?? 0), 0)
  if (lost > 0) return amber(`${count(lost)} ${lost === 1 ? 'path is' : 'paths are'} skipped, not indexed`, 'open the skipped list under Folders: each path says what to do')
  const p = s.publish
  if (p === null) return undefined
  if (p.last === null) return amber('nothing is published yet', 'nothing: the first publish follows the scan (or press Publish now)')
  const c = s.content
  const failed = c?.folders.reduce((n, f) => n + f.failed, 0) ?? 0
  if (c != null && failed > 0) return amber(`${files(failed)} failed to upload`, c.failures[0]?.advice ?? 'nothing: it is tried again')
  const pending = c?.folders.reduce((n, f) => n + f.pending.files, 0) ?? 0
  if (pending > 0) return amber(`${files(pending)} ${pending === 1 ? 'waits' : 'wait'} to be stored`, 'nothing: they are stored in the next pass')
  if (!p.pointer.inSync) {
    return p.pendingAt !== null || p.running
      ? amber('changes wait to be published', p.running ? 'nothing: a publish is running' : `nothing: they are published at ${p.pendingAt ?? ''}`)
      : amber(`the pointer is not this device's last publish: ${p.pointer.why ?? ''}`, 'nothing: the next publish takes care of it')
  }
  if (s.auth?.sessionToken.warning != null) return amber('publishing stops soon', s.auth.sessionToken.warning)
  return undefined
}

/** `all 3 files are`, `the one file is`. */
function every (n: number): string {
  return n === 1 ? 'the one file is' : `all ${count(n)} files are`
}

/** Every file published, and stored where its folder stores content. */
function filesPart (s: Input): Part {
  const problem = filesProblem(s) ?? filesPending(s)
  if (problem !== undefined) return problem
  if (s.index.files === 0) return { level: 'green', text: 'the folders hold no files yet' }
  const storing = new Set((s.content?.folders ?? []).map(f => f.folder))
  const indexOnly = s.folders.filter(f => !storing.has(f.name) && f.files > 0)
  const leftOut = (s.content?.folders ?? []).reduce((n, f) => n + f.leftOut.files, 0)
  if (indexOnly.length === 0 && leftOut === 0) return { level: 'green', text: `${every(s.index.files)} stored and published` }
  if (storing.size === 0) return { level: 'green', text: `${every(s.index.files)} published, as an index only (no folder has store = true)` }
  const stored = (s.content?.folders ?? []).reduce((n, f) => n + f.protected.files, 0)
  const notes = [
    indexOnly.length > 0 ? `${indexOnly.map(f => f.name).join(', ')} ${indexOnly.length === 1 ? 'keeps' : 'keep'} the index only` : '',
    leftOut > 0 ? `${count(leftOut)} left out by [content]` : ''
  ].filter(Boolean).join(', ')
  return { level: 'green', text: `${every(s.index.files)} published, ${count(stored)} with their content stored (${notes})` }
}

function restorablePart (s: Input): Part {
  const r = s.restorable
  if (r === null) return amber('no restore drill has checked the index yet', 'press Verify now (or run `cidsync verify`)')
  if (!r.ok) return red(`the index is NOT restorable (the drill at ${r.checkedAt} failed: ${r.failed ?? '?'})`, 'publish again, then Verify now (`cidsync snapshot`, then `cidsync verify`)')
  const since = s.publish?.last !== null && s.publish?.last !== undefined && s.publish.last.cid !== r.cid ? ', published again since' : ''
  return { level: 'green', text: `the index is restorable as of the drill at ${r.checkedAt}${since}` }
}

function mirrorsPart (s: Input): Part {
  const mirrors = s.mirrors ?? []
  if (mirrors.length === 0) return { level: 'green', text: 'no mirrors are set up' }
  for (const m of mirrors) {
    if (m.restorable !== null && !m.restorable.ok) return red(`mirror ${m.name} is NOT restorable`, `\`cidsync verify --mirror ${m.name}\` once it caught up`)
    if (m.pointer?.state === 'ahead') return red(`mirror ${m.name}'s pointer is ahead`, m.pointer.message)
    if (m.lagging) return red(`mirror ${m.name} lags past its max_lag_seconds`, m.lastError?.advice ?? 'nothing: it catches up by itself; check that it answers')
  }
  for (const m of mirrors) {
    if (m.lastError !== null) return amber(`copying to mirror ${m.name} fails`, m.lastError.advice)
    if (m.objectsBehind > 0 || m.publishesBehind > 0) return amber(`mirror ${m.name} is catching up (${behindOf(m)})`, 'nothing: it catches up by itself')
    if (m.unavailable.count > 0) return amber(`mirror ${m.name} lacks ${some(m.unavailable.count, 'object', 'objects')} the primary no longer gives`, 'see Mirrors')
  }
  return { level: 'green', text: mirrors.length === 1 ? `mirror ${mirrors[0]?.name ?? ''} is caught up` : `all ${mirrors.length} mirrors are caught up` }
}

const RANK: Record<GlanceLevel, number> = { green: 0, amber: 1, red: 2 }

/**
 * The one-glance line at the top of the dashboard: files, the last drill, mirrors, each as a
 * clause; the worst clause gives the level and the one thing to do (a red one before an amber).
 */
export function glanceOf (s: Input): Glance {
  const parts = [filesPart(s), restorablePart(s), mirrorsPart(s)]
  const worst = parts.reduce((a, b) => RANK[b.level] > RANK[a.level] ? b : a)
  const text = parts.map(p => p.text).join('; ')
  return { level: worst.level, sentence: `${text.charAt(0).toUpperCase()}${text.slice(1)}.`, todo: worst.todo ?? null }
}
