import type { StatusDocument } from '../daemon/index.js'
import { timeWithAge } from './relative-time.js'

/** A mirror's lag in words: none, or what waits and since how long. */
function lagText (m: NonNullable<StatusDocument['mirrors']>[number]): string {
  // Skipped objects are missing there: never "caught up" while a restore from it would lack them.
  if (m.objectsBehind === 0 && m.publishesBehind === 0) return m.unavailable.count === 0 ? 'caught up' : `copied all it could, ${m.unavailable.count} ${m.unavailable.count === 1 ? 'object' : 'objects'} missing (see below)`
  const minutes = Math.round(m.lagSeconds / 60)
  return `${m.objectsBehind} ${m.objectsBehind === 1 ? 'object' : 'objects'}, ${m.publishesBehind} ${m.publishesBehind === 1 ? 'publish' : 'publishes'} behind (oldest waiting ${minutes < 1 ? `${m.lagSeconds} s` : `${minutes} min`}${m.lagging ? `, past max_lag_seconds ${m.maxLagSeconds}` : ''})`
}

/**
 * `: ADVICE`, or nothing when the message already says it: a refused or unbound credential's
 * message names the `cidsync login --mirror` to run, and the advice naming it again read as two
 * things to do. Advice with no command in backquotes is always added.
 */
export function adviceAfter (message: string, advice: string): string {
  const commands = [...advice.matchAll(/`([^`]+)`/g)].map(m => m[1] as string)
  return commands.length > 0 && commands.every(c => message.includes(c)) ? '' : `: ${advice}`
}

/** `cidsync status`'s lines for each mirror: lag, last publish there, the last error and what to do, pointer notes, drill. */
export function mirrorLines (s: Pick<StatusDocument, 'mirrors'>): string[] {
  const lines: string[] = []
  for (const m of s.mirrors ?? []) {
    const last = m.lastPublish === null ? 'no publish there yet' : `last publish ${m.lastPublish.cid} at ${timeWithAge(m.lastPublish.at)}`
    lines.push(`mirror ${m.name}: ${lagText(m)}; ${last}`)
    if (m.lastError !== null) lines.push(`mirror ${m.name}: copying failed at ${timeWithAge(m.lastError.at)}: ${m.lastError.message} [${m.lastError.code ?? 'ERR_CIDSYNC'}]${adviceAfter(m.lastError.message, m.lastError.advice)}${m.retryAt === null ? '' : `; next try at ${m.retryAt}`}`)
    if (m.pointer !== null) lines.push(`mirror ${m.name}: pointer ${m.pointer.state} (seen at ${timeWithAge(m.pointer.at)}): ${m.pointer.message} [${m.pointer.code}]`)
    if (m.unavailable.count > 0) lines.push(`mirror ${m.name}: ${m.unavailable.count} ${m.unavailable.count === 1 ? 'object' : 'objects'} the primary would not give are missing there (last ${m.unavailable.last?.cid ?? '?'}: ${m.unavailable.last?.message ?? ''}): they are tried again every 10 minutes; if the primary lost them, store the files again from a device that has them`)
    const r = m.restorable
    lines.push(`mirror ${m.name}: restorable: ${r === null ? `not checked yet (\`cidsync verify --mirror ${m.name}\`, or the [verify] schedule)` : r.ok ? `yes (drill at ${timeWithAge(r.checkedAt)})` : `NO (drill at ${timeWithAge(r.checkedAt)}): ${r.failed ?? '?'}`}`)
  }
  return lines
}
