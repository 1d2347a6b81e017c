import type { StatusDocument } from '../daemon/index.js'
import { countOf, formatBytes, formatCount, formatTable } from './format.js'
import { timeWithAge } from './relative-time.js'

/** Failed files listed by name at most; `status --json` has them all. */
const FAILED_LINES = 10

/**
 * What `cidsync status` shows of files' content (folders with `store = true`): per folder the
 * files and bytes protected, pending and failed; the upload rate and what dedup saved; each
 * failed file with why and what to do. `s` has been through `safeDocument`.
 */
export function contentLines (s: StatusDocument): string[] {
  const c = s.content
  if (c == null) return []
  if (c.folders.length === 0) return ['content: no folder stores its files\' content (set store = true on a [[folders]] entry): the index alone is kept']
  const uploading = c.uploading?.length ?? 0
  const lines = [
    `content: ${c.running ? `storing now${uploading > 0 ? ` (${countOf(uploading, 'file', 'files')} in this pass)` : ''}` : 'idle'}` +
      // A rate only while a pass runs: idle, nothing is being uploaded.
      `${c.running ? ` · upload rate ${formatBytes(c.uploadRate)}/s` : ''} · ${formatBytes(c.storedBytesTotal)} uploaded since start · ${formatBytes(c.savedByDedup)} saved by dedup` +
      (c.lastRun === null ? ' · no pass yet' : ` · last pass ${timeWithAge(c.lastRun)}`),
    formatTable(['FOLDER', 'PROTECTED', 'BYTES', 'PENDING', 'BYTES', 'FAILED', 'LEFT OUT'], c.folders.map(f => [
      f.folder, formatCount(f.protected.files), formatBytes(f.protected.bytes), formatCount(f.pending.files), formatBytes(f.pending.bytes), String(f.failed),
      formatCount(f.leftOut?.files ?? 0)
    ]), new Set([1, 2, 3, 4, 5, 6])).trimEnd()
  ]
  if (c.folders.some(f => (f.leftOut?.files ?? 0) > 0)) lines.push('  left out: files never stored ([content] exclude, or larger than max_file_size); `cidsync ls` says which')
  if ((c.indexRefused ?? 0) > 0) {
    lines.push(`  ${countOf(c.indexRefused ?? 0, 'content index object was', 'content index objects were')} refused as damaged or forged: their records are not used, so that content may be sent again. ` +
      'The service holds objects that are not what they claim; `cidsync verify --full` checks what the pointer names')
  }
  if (c.tooLarge > 0) lines.push(`  ${countOf(c.tooLarge, 'file is', 'files are')} larger than [content] max_file_size: indexed, not stored (raise it, or exclude them with [content] exclude)`)
  if (c.lastError !== null) lines.push(`  the last pass failed at ${timeWithAge(c.lastError.at)}: ${c.lastError.message}${c.lastError.code === null ? '' : ` [${c.lastError.code}]`}${c.retryAt === null ? '' : `; next try at ${c.retryAt}`}`)
  for (const f of c.failures.slice(0, FAILED_LINES)) {
    lines.push(`  failed: ${f.folder}/${f.path} (${f.code} since ${f.since}, ${countOf(f.attempts, 'try', 'tries')}, next at ${f.retryAt}): ${f.message}: ${f.advice ?? 'it is tried again'}`)
  }
  if (c.failures.length > FAILED_LINES) lines.push(`  ${c.failures.length - FAILED_LINES} more failed (cidsync status --json lists them all; cidsync ls shows each file's state)`)
  if (c.failingTooLong) lines.push(`  uploads have failed for more than ${Math.round((c.failingBoundMs ?? 3_600_000) / 60_000)} min: \`cidsync status --check\` fails until they go through`)
  return lines
}
