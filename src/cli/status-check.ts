import type { StatusDocument } from '../daemon/index.js'
import { adviceAfter } from './mirror-lines.js'

/**
 * What is wrong, for monitoring scripts (`cidsync status --check`): a folder in error, a service
 * that cannot be reached, publishing stopped or its last attempt failed after the last success, a
 * restore drill that failed, an index that cannot be written, files' uploads failing for longer than the bound,
 * a session token expired or expiring within days with nothing renewing it. Each line says what and what to do; none means healthy.
 */
export function statusProblems (s: StatusDocument): string[] {
  const problems: string[] = []
  for (const folder of s.folders) {
    if (folder.state === 'error' || folder.error !== null) problems.push(`folder ${folder.name}: ${folder.error ?? folder.state}`)
  }
  if (s.service.error !== null) problems.push(`service: cannot be reached: ${s.service.error}`)
  if (s.publish !== null) {
    if (s.publish.blocked !== null) {
      problems.push(`publish: stopped: ${s.publish.blocked}`)
    } else if (s.publish.held != null) {
      problems.push(`publish: held: ${s.publish.held.message}`)
    } else if (s.publish.lastError !== null && (s.publish.last?.at == null || s.publish.lastError.at > s.publish.last.at)) {
      problems.push(`publish: the last attempt failed at ${s.publish.lastError.at}: ${s.publish.lastError.message}`)
    }
  }
  // Set back, a restore gets an older index than was published: a problem until a publish heals it.
  if (s.publish?.pointer.setBack === true) problems.push(`pointer: not in sync: ${s.publish.pointer.why ?? 'set back'}: it heals at the next publish (\`cidsync snapshot\` now); tell the service if it repeats`)
  if (s.publish?.refused != null) problems.push(`pointer: refused part of it: ${s.publish.refused.message} [${s.publish.refused.code}]`)
  // Days ahead, so a token nothing renews is replaced before publishing stops.
  // A daemon from before token renewal answers no `auth`.
  const token = s.auth?.sessionToken
  if (token?.problem != null) problems.push(`auth: ${token.problem}`)
  if (s.reload != null && !s.reload.ok) problems.push(reloadRefusedLine(s.reload))
  problems.push(...contentProblems(s))
  problems.push(...mirrorProblems(s))
  if (s.restorable != null && !s.restorable.ok) problems.push(`restorable: NO, the restore drill at ${s.restorable.checkedAt} failed: ${s.restorable.failed ?? '?'}: publish again (\`cidsync snapshot\`), then \`cidsync verify\``)
  // A write that failed and then went through is history (counted in writeErrors), not a problem now.
  if (s.index.writeState !== undefined && s.index.writeState !== 'ok') problems.push(`index: writes ${s.index.writeState === 'stopped' ? 'stopped' : 'failing, retried'}: ${s.index.lastError?.message ?? 'see the recent errors in `cidsync status`'}`)
  else if (s.index.writeState === undefined && s.index.writeErrors > 0) problems.push(`index: ${s.index.writeErrors} ${s.index.writeErrors === 1 ? 'write' : 'writes'} failed: see the recent errors in \`cidsync status\``)
  return problems
}

/** Failed uploads past the bound ({@link StatusDocument.content}'s `failingTooLong`): which, since when, and what to do. */
function contentProblems (s: StatusDocument): string[] {
  const content = s.content
  if (content == null || content.failingTooLong !== true) return []
  const hours = Math.round((content.failingBoundMs ?? 3_600_000) / 360_000) / 10
  const old = [...content.failures].sort((a, b) => a.since < b.since ? -1 : 1)
  const shown = old.slice(0, 5).map(f => `${f.folder}/${f.path} (since ${f.since}, ${f.attempts} ${f.attempts === 1 ? 'try' : 'tries'}: ${f.message} [${f.code}])`)
  return [`content: ${old.length} ${old.length === 1 ? 'file has' : 'files have'} failed to upload, the oldest for more than ${hours} h: ${shown.join('; ')}${old.length > 5 ? `; ${old.length - 5} more (\`cidsync status --json\`)` : ''}: ` +
    `${old[0]?.advice ?? 'check the service'}; \`cidsync ls\` shows each file's state`]
}

/** Mirrors lagging past their bound, whose pointer went astray, or whose last drill failed. */
export function mirrorProblems (s: StatusDocument): string[] {
  const problems: string[] = []
  for (const m of s.mirrors ?? []) {
    if (m.lagging) {
      problems.push(`mirror ${m.name}: ${m.objectsBehind} ${m.objectsBehind === 1 ? 'object' : 'objects'} and ${m.publishesBehind} ${m.publishesBehind === 1 ? 'publish' : 'publishes'} behind for ${m.lagSeconds} s, past max_lag_seconds (${m.maxLagSeconds})` +
        (m.lastError === null ? ': it catches up by itself' : `: ${m.lastError.message} [${m.lastError.code ?? 'ERR_CIDSYNC'}]${adviceAfter(m.lastError.message, m.lastError.advice)}`))
    }
    if (m.pointer?.state === 'ahead') problems.push(`mirror ${m.name}: ${m.pointer.message} [${m.pointer.code}]`)
    if (m.restorable !== null && !m.restorable.ok) problems.push(`mirror ${m.name}: NOT restorable, the drill at ${m.restorable.checkedAt} failed: ${m.restorable.failed ?? '?'}: \`cidsync verify --mirror ${m.name}\` after it caught up`)
  }
  return problems
}

/**
 * Mirrors failing to copy that are not a problem yet (within max_lag_seconds): `--check` still
 * exits 0, but its "ok" line says so, so a person reading it is not told all is well.
 */
export function mirrorNotes (s: StatusDocument): string[] {
  return (s.mirrors ?? []).filter(m => !m.lagging && m.lastError !== null)
    .map(m => `mirror ${m.name}: copying fails (${m.lastError?.code ?? 'ERR_CIDSYNC'} at ${m.lastError?.at ?? '?'}), ${m.lagSeconds} s behind, within the ${m.maxLagSeconds} s its max_lag_seconds allows: \`cidsync status\` says why`)
}

const BAR_WIDTH = 24

/** `[######------------------]  312 / 1,024 files`: a scan's hashing progress, for `--watch`. */
export function progressBar (done: number, total: number): string {
  const filled = total <= 0 ? BAR_WIDTH : Math.min(BAR_WIDTH, Math.floor(done / total * BAR_WIDTH))
  return `[${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}]`
}

/**
 * The service reached once but not at the last try: the latest failed publish or reconciliation
 * that could not reach it (`ERR_REMOTE_NETWORK`), when nothing has succeeded since.
 */
export function lastUnreachable (s: StatusDocument): { what: string, at: string, message: string } | undefined {
  const tries = [
    { what: 'publish', error: s.publish?.lastError, since: s.publish?.last?.at ?? null },
    { what: 'reconciliation', error: s.reconcile?.lastError, since: s.reconcile?.lastRun ?? null }
  ]
  let found: { what: string, at: string, message: string } | undefined
  for (const t of tries) {
    if (t.error?.code !== 'ERR_REMOTE_NETWORK' || (t.since !== null && t.since >= t.error.at)) continue
    if (found === undefined || t.error.at > found.at) found = { what: t.what, at: t.error.at, message: t.error.message }
  }
  return found
}

/** A refused reload: the file on disk is not what runs. */
export function reloadRefusedLine (r: NonNullable<StatusDocument['reload']>): string {
  return `config: the last reload (at ${r.at}) was refused, the daemon runs on the config it had: ${(r.refused ?? '?').replace(/\s*\n\s*/g, ' ')}: fix ${r.config ?? 'the config file'}, then reload (SIGHUP, \`systemctl reload cidsync\`)`
}
