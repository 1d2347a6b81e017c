import type { Command } from 'commander'
import { loadConfigLocatingDaemon } from '../../config/index.js'
import type { StatusDocument } from '../../daemon/index.js'
import { countOf, formatBytes, formatCount, formatDuration, formatTable } from '../format.js'
import { StatusCheckError, StatusUnavailableError, UsageError } from '../../errors.js'
import { action, reportError } from '../run.js'
import { timeWithAge } from '../relative-time.js'
import { lastUnreachable, mirrorNotes, progressBar, reloadRefusedLine, statusProblems } from '../status-check.js'
import { safeDocument } from '../safe-text.js'
import { contentLines } from '../content-lines.js'
import { mirrorLines } from '../mirror-lines.js'
import { retentionLines } from '../retention-lines.js'

function publishLines (s: StatusDocument): string[] {
  const lines: string[] = []
  if (s.publish !== null) {
    const last = s.publish.last === null ? 'nothing published yet' : `last snapshot ${s.publish.last.cid} at ${s.publish.last.at === null ? '?' : timeWithAge(s.publish.last.at)}, ${countOf(s.publish.last.entries, 'entry', 'entries')}`
    lines.push(`publish: ${last}${s.publish.pendingAt === null ? '' : `; next after changes at ${timeWithAge(s.publish.pendingAt)}`}`)
    // As last read (after a publish, at each reconciliation): another device's publish since is not seen until then.
    const read = s.publish.pointer.at === null ? '' : `; read ${timeWithAge(s.publish.pointer.at)}`
    lines.push(`pointer: ${s.publish.pointer.inSync ? `in sync (${s.publish.pointer.cid ?? ''}${read})` : `not in sync: ${s.publish.pointer.why ?? ''}${read === '' ? '' : ` (${read.slice(2)})`}`}`)
    lines.push(`ipns: ${ipnsLine(s.publish.ipns)}`)
    const r = s.restorable
    lines.push(`restorable: ${r == null ? 'not checked yet (the drill runs on [verify] schedule, or `cidsync verify`)' : r.ok ? `yes (drill at ${timeWithAge(r.checkedAt)})` : `NO (drill at ${timeWithAge(r.checkedAt)}): ${r.failed ?? '?'}`}`)
    if (s.publish.refused != null) lines.push(`pointer: refused part of it at ${s.publish.refused.at}: ${s.publish.refused.message} [${s.publish.refused.code}]`)
    if (s.publish.rolledBack != null) lines.push(`pointer: found set back at ${s.publish.rolledBack.at}: ${s.publish.rolledBack.message} [${s.publish.rolledBack.code}]`)
    if (s.publish.blocked !== null) lines.push(`publish: stopped: ${s.publish.blocked}`)
    else if (s.publish.held != null) lines.push(`publish: held since ${s.publish.held.since}: ${s.publish.held.message}`)
    else if (s.publish.lastError !== null) lines.push(`publish: last attempt failed at ${timeWithAge(s.publish.lastError.at)}: ${s.publish.lastError.message}${s.publish.retryAt == null ? '' : `; next try at ${s.publish.retryAt}`}`)
  }
  if (s.reconcile !== null) {
    lines.push(`account: ${formatCount(s.reconcile.remoteFiles)} uploads (${s.reconcile.gone} gone) · deals pending ${s.reconcile.deals.pending}, overdue ${s.reconcile.deals.overdue}, made ${s.reconcile.deals.made}` +
      (s.reconcile.lastRun === null ? ' · not reconciled yet' : ` · reconciled ${timeWithAge(s.reconcile.lastRun)}`))
  }
  const token = s.auth?.sessionToken
  if (token?.warning != null) lines.push(`auth: ${token.warning}`)
  lines.push(...retentionLines(s.retention))
  lines.push(...mirrorLines(s))
  return lines
}

/** The IPNS name snapshots are published to, or why there is none yet. */
export function ipnsLine (ipns: NonNullable<StatusDocument['publish']>['ipns'] | undefined): string {
  if (ipns == null) return 'none ([snapshot] ipns_key is not set)'
  if (ipns.name === null) return 'a key is made at the next publish (ipns_key = "auto")'
  const id = ipns.id === null ? `key ${ipns.name}` : `/ipns/${ipns.id} (key ${ipns.name})`
  return ipns.cid === null ? `${id}, published to at the next publish` : `${id} -> ${ipns.cid} at ${ipns.at ?? '?'}`
}

/** The service: reached, not yet, or not at the last publish or reconciliation (a network error). */
function serviceLine (s: StatusDocument): string {
  if (s.service.error !== null) return `service: cannot be reached: ${s.service.error}`
  if (s.service.endpoint === null) return 'service: reached once the index is current'
  const lost = lastUnreachable(s)
  return lost === undefined
    ? `service: ${s.service.endpoint}`
    : `service: ${s.service.endpoint}: cannot be reached (the last ${lost.what}, at ${lost.at}, failed): ${lost.message} [ERR_REMOTE_NETWORK]`
}

const SKIPPED_LINES = 5

/** Index writes failing, and the drift check's last result. */
function indexLines (s: StatusDocument): string[] {
  const lines: string[] = []
  if (s.index.writeState !== undefined && s.index.writeState !== 'ok') {
    lines.push(`index: writes ${s.index.writeState === 'stopped' ? 'stopped' : `failing (${s.index.pendingWrites} changes kept${s.index.lastError?.retryAt == null ? '' : `, next try at ${s.index.lastError.retryAt}`})`}: ${s.index.lastError?.message ?? ''}`)
  }
  const drift = s.drift
  if (drift != null) {
    lines.push(drift.lastRunAt === null
      ? `drift check: not run yet${drift.nextRunAt === null ? ' (only on `cidsync rescan`)' : ` · next at ${drift.nextRunAt}`}`
      : `drift check: ${drift.running ? 'running · ' : ''}last at ${timeWithAge(drift.lastRunAt)}, repaired ${drift.lastRepaired ?? 0} (${drift.totalRepaired} since start)` +
        (drift.lastUnchecked.length > 0 ? ` · not checked: ${drift.lastUnchecked.join(', ')}` : '') + (drift.nextRunAt === null ? '' : ` · next at ${drift.nextRunAt}`))
  }
  return lines
}

/** ` (×12 since T)`: an error the daemon folded repeats of; the time before it is the last. */
function repeats (e: StatusDocument['lastErrors'][number]): string {
  return e.count !== undefined && e.count > 1 ? ` (×${formatCount(e.count)} since ${e.firstAt ?? '?'})` : ''
}

/** The readable summary of a status document, every name in it shown with control characters neutralised. */
export function formatStatus (document: StatusDocument): string {
  const s = safeDocument(document)
  const lines = [
    `cidsync ${s.version} · device ${s.device.id.slice(0, 8)} (${s.device.hostname}) · up ${formatDuration(s.uptimeSeconds)} · pid ${s.pid}`,
    `namespace ${s.namespace} · network ${s.network} · service ${s.service.mode} · profile ${s.cidProfile}`,
    // The dashboard's one-glance line: the whole in a sentence, and the one thing to do.
    ...(s.glance == null ? [] : [`${s.glance.level}: ${s.glance.sentence}${s.glance.todo == null ? '' : ` To do: ${s.glance.todo}`}`]),
    `watcher ${s.watcher.state}` + (s.watcher.currentAt !== null ? ` · index current since ${timeWithAge(s.watcher.currentAt)}` : ' · scanning, index not yet current'),
    ...(s.watcher.hashing.files > 0
      ? [`hashing ${countOf(s.watcher.hashing.files, 'file', 'files')} ${progressBar(s.watcher.hashing.bytesRead, s.watcher.hashing.bytes)} ${formatBytes(s.watcher.hashing.bytesRead)} of ${formatBytes(s.watcher.hashing.bytes)} read`]
      : []),
    `index ${countOf(s.index.files, 'file', 'files')}, ${formatBytes(s.index.bytes)} · ${s.stateDir}`,
    ...(s.reload != null && !s.reload.ok ? [reloadRefusedLine(s.reload)] : []),
    ...indexLines(s),
    serviceLine(s),
    ...publishLines(s),
    ''
  ]
  if (s.folders.length === 0) {
    lines.push('no folders configured: add [[folders]] to the config')
  } else {
    lines.push(formatTable(['FOLDER', 'STATE', 'FILES', 'SIZE', 'TO HASH', 'SKIPPED', 'PATH'], s.folders.map(f => [
      f.name, f.state, formatCount(f.files), formatBytes(f.bytes), String(f.scan.toHash), String(f.skipped), f.path
    ]), new Set([2, 3, 4, 5])).trimEnd())
    for (const f of s.folders) {
      if (f.error !== null) lines.push(`  ${f.name}: ${f.error}`)
      for (const note of f.notes ?? []) lines.push(`  ${f.name}: note: ${note}`)
      for (const skipped of (f.skippedFiles ?? []).slice(0, SKIPPED_LINES)) {
        lines.push(`  ${f.name}: skipped ${skipped.path}${skipped.kind === 'dir' ? '/' : ''} (${skipped.reason} since ${skipped.since}, ${countOf(skipped.retries, 'retry', 'retries')}${skipped.nextRetryAt === null ? '' : `, next at ${skipped.nextRetryAt}`}): ${skipped.advice}`)
      }
      if (f.skipped > SKIPPED_LINES) lines.push(`  ${f.name}: ${f.skipped - SKIPPED_LINES} more skipped (cidsync status --json lists up to 100)`)
      if (f.scan.toHash > 0 && f.scan.hashed < f.scan.toHash) {
        lines.push(`  ${f.name}: hashing ${progressBar(f.scan.hashed, f.scan.toHash)} ${formatCount(f.scan.hashed)} / ${countOf(f.scan.toHash, 'file', 'files')}, ${formatBytes(f.scan.hashedBytes)} hashed`)
      }
    }
  }
  const content = contentLines(s)
  if (content.length > 0) lines.push('', ...content)
  for (const r of s.stateFiles?.recovered ?? []) lines.push(`recovered at ${r.at}: ${r.file}: ${r.problem}: ${r.action}`)
  if (s.stateFiles?.syncStateError != null) lines.push(`sync state: ${s.stateFiles.syncStateError}`)
  if (s.lastErrors.length > 0) {
    lines.push('', 'recent errors:')
    for (const e of s.lastErrors.slice(-5)) lines.push(`  ${e.at}  ${e.message}${e.code !== null ? ` [${e.code}]` : ''}${repeats(e)}`)
  }
  // Resolved ones apart, so a transient failure that went away does not read as a current one.
  const resolved = s.resolvedErrors ?? []
  if (resolved.length > 0) {
    lines.push('', 'resolved since (not errors any more):')
    for (const e of resolved.slice(-3)) lines.push(`  ${e.at}  ${e.message}${e.code !== null ? ` [${e.code}]` : ''}${repeats(e)} · resolved ${e.resolvedAt}`)
  }
  return lines.join('\n') + '\n'
}

interface StatusOptions { config?: string, json?: boolean, check?: boolean, watch?: string | boolean }

/** `--watch`: the summary again every few seconds (the screen cleared on a terminal) until Ctrl-C. */
async function watch (read: () => Promise<string>, seconds: number, json: boolean): Promise<void> {
  let stopped = false
  const stop = (): void => { stopped = true }
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
  while (!stopped) {
    let frame: string
    try {
      const body = await read()
      frame = json ? body : formatStatus(JSON.parse(body) as StatusDocument)
    } catch (err) {
      frame = ''
      reportError(err) // the daemon may be restarting: keep watching
    }
    if (process.stdout.isTTY) process.stdout.write('\x1b[H\x1b[2J')
    process.stdout.write(`${frame}${process.stdout.isTTY ? '' : '\n'}`)
    const deadline = Date.now() + seconds * 1000
    while (!stopped && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, Math.min(200, seconds * 1000)))
  }
}

const STATUS_HELP = `
What it shows:
Each folder, the index, the last publish, the pointer, the restore drill, mirrors and recent errors.
With [retention]: the last forget and prune, what the account held and what a prune would free.
Each figure is shown with when it was counted (docs/retention.md, "What status shows").
Times carry their age, as in 3 min ago; sizes are binary units (KiB, MiB).
It finds the daemon through daemon.json in the state dir, so a daemon on port 0 is found too.
It believes an answer only once the daemon proves it holds the state dir's status.token.
With no daemon running, it shows what the state dir holds, and exits 1.
That is the index by folder, the last publish, the last restore drill, forget and prune.
With --json, that is a document whose daemon.running is false, with why.
Its index.files, index.bytes, folders (name, files, bytes), publish.last, restorable, retention and mirrors are named as the daemon's.
It lacks what only a running daemon knows; the daemon's document has no daemon field.
So a script tells them apart by the exit, or by daemon.running being false.

For monitoring:
--check prints a line starting with ok and exits 0, or exits 1 naming each problem.
A problem is a folder, the service or publishing in error, or uploads failing for over an hour.
It is one too when a mirror lags past its max_lag_seconds, has its pointer found ahead or failed its drill.
It is one too when the session token expires within 7 days and nothing renews it.
--json prints the status document as the daemon serves it (GET /status).
--watch shows the summary again every few seconds, with hashing progress, until Ctrl-C.
docs/operations.md, "Troubleshooting by symptom", says what each line means and what to do.`

export function registerStatus (program: Command): void {
  program.command('status')
    .description('what the running daemon is doing, from its status endpoint')
    .addHelpText('after', STATUS_HELP)
    .option('--config <path>', 'config file')
    .option('--json', 'print the raw status document')
    .option('--check', 'exit 1 naming each problem, for monitoring (below)')
    .option('--watch [seconds]', 'show it again every few seconds (default 2) until Ctrl-C')
    .action(action(async (options: StatusOptions) => {
      // A config file broken since the daemon started must not hide the daemon still running on the old one.
      const { config, problem } = loadConfigLocatingDaemon({ configPath: options.config })
      const { getFromDaemon } = await import('../status-client.js')
      // Said once a daemon answered: with none, the config's own error is what stops the command.
      let warned = false
      const read = async (): Promise<string> => {
        let answer: string
        try {
          answer = await getFromDaemon(config, '/status')
        } catch (err) {
          throw problem ?? err
        }
        if (problem !== undefined && !warned) {
          warned = true
          process.stderr.write(`cidsync: warning: the config file does not load (the daemon keeps the one it had until it does): ${problem.message}\n`)
        }
        return answer
      }
      if (options.watch !== undefined && options.watch !== false) {
        const seconds = options.watch === true ? 2 : Number(options.watch)
        if (!Number.isFinite(seconds) || seconds <= 0) throw new UsageError(`--watch ${String(options.watch)}: expected a number of seconds above 0`)
        await watch(read, seconds, options.json === true)
        return
      }
      let body: string
      try {
        body = await read()
      } catch (err) {
        // No daemon: a plain `status` still shows what the state dir holds, then fails as before.
        if (!(err instanceof StatusUnavailableError) || options.check === true) throw err
        const { offlineState, offlineSummary } = await import('../status-offline.js')
        process.stdout.write(options.json === true ? JSON.stringify(await offlineState(config, err.message), null, 2) + '\n' : await offlineSummary(config, err.message))
        throw err
      }
      const document = JSON.parse(body) as StatusDocument
      if (options.check === true) {
        const problems = [...(problem === undefined ? [] : [`config: ${problem.message}`]), ...statusProblems(safeDocument(document))]
        if (problems.length > 0) throw new StatusCheckError(`${countOf(problems.length, 'problem', 'problems')}:\n  ${problems.join('\n  ')}`)
        const notes = mirrorNotes(safeDocument(document))
        process.stdout.write(`ok: ${countOf(document.folders.length, 'folder', 'folders')} watched, ${countOf(document.index.files, 'file', 'files')} indexed${document.publish?.last != null ? `, last published ${document.publish.last.at ?? '?'}` : ''}` +
          `${notes.length === 0 ? '' : `; not yet a problem: ${notes.join('; ')}`}\n`)
        return
      }
      process.stdout.write(options.json === true ? body : formatStatus(document))
    }))
}
