import { existsSync, statSync, type Stats } from 'node:fs'
import type { Command } from 'commander'
import type { Config } from '../../config/index.js'
import { ExtraNotDeletedError, FilesNotRestoredError, GatewayFetchError, IndexMissingError, InterruptedError, PathNotFoundError, UsageError } from '../../errors.js'
import type { GetFilesProgress, GetOutcome, PointerAhead, Repository } from '../../sync/index.js'
import type { Entry, Index } from '../../index/index.js'
import { countOf, formatCount } from '../format.js'
import { progressReporter } from '../get-progress.js'
import { action } from '../run.js'
import { safeLines, safeText } from '../safe-text.js'
import { loadConfig } from '../../config/index.js'
import { readFrom } from '../mirror-read.js'
import { parseTimeArg } from '../time-arg.js'
import { boundHeapGrowth } from '../../util/release-memory.js'
import { StoppedBy, unlessStopped, untilInterrupted } from '../interrupt.js'
import { failpoint } from '../../util/failpoint.js'
import { resolveDevice } from './ls.js'

import type { GetOptions } from './get-options.js'
export type { GetOptions } from './get-options.js'

/**
 * Brings the chosen files back (shared by `get` and `restore --files`): rows from this device's
 * index, or from the publish `--at` names, then every file through `getFiles`. Exits 0 only when
 * every file is in place; each one that is not is named with why.
 */
export async function runGet (options: GetOptions, paths: readonly string[], prefix: boolean): Promise<void> {
  // Said before anything is read: `--to ''` was taken as no --to (into the folders themselves), and `--to -` made a directory named -.
  if (options.to === '') throw new UsageError('--to needs a directory: an empty one would write into each folder\'s configured path; leave --to out for that')
  if (options.to === '-') throw new UsageError('--to -: files are written into a directory, not to standard output: give a path (./- for a directory named -)')
  // A file there failed later with a bare ENOTDIR from mkdir, uncoded.
  if (options.to !== undefined) {
    let there: Stats | undefined
    try {
      there = statSync(options.to, { throwIfNoEntry: false })
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOTDIR') throw new UsageError(`--to ${options.to}: a part of that path is a file, not a directory: give a directory (made if it is missing)`)
      // What cannot be looked at (EACCES), making it says why.
    }
    if (there !== undefined && !there.isDirectory()) throw new UsageError(`--to ${options.to} is not a directory: give a directory (made if it is missing)`)
  }
  const at = options.at === undefined ? undefined : parseTimeArg(options.at)
  const config: Config = loadConfig({ configPath: options.config })
  // Before the index's rows are read: their garbage would set how far the heap grows for the whole run.
  boundHeapGrowth()
  // Per-file failures are outcomes, not a throw: without this, `restore --files` (and `get`) with
  // the primary down failed every file and never read the mirrors, as docs/mirrors.md says they do.
  const fallsBack = options.from === undefined && config.mirrors.length > 0
  const lastSource = `mirror ${config.mirrors.at(-1)?.name ?? ''}`
  await readFrom(config, { from: options.from, fallBack: true }, async ({ repository }, where) => {
    const { indexPath, openIndex, readDeviceId } = await import('../../index/index.js')
    const { getFiles, olderThanOwnDeletion, recordSources, selectRows, selectTree } = await import('../../sync/index.js')
    // The repository closes the past index it opened.
    const past = at === undefined ? undefined : await repository.pastIndex(at)
    // A new device reading a USB disk has no index yet: the one to install is the disk's, not the primary's.
    if (past === undefined && options.from !== undefined && !existsSync(indexPath(config.stateDir))) {
      throw new IndexMissingError(indexPath(config.stateDir), `install the one it holds first (cidsync restore --from ${safeText(options.from)})`)
    }
    const index = past?.index ?? openIndex(indexPath(config.stateDir), { readonly: true, cacheKiB: 2048 })
    try {
      const deviceId = options.device === undefined ? undefined : resolveDevice(options.device, index.entries.devices())
      const own = readDeviceId(config.stateDir)
      // `restore --files` makes the publish's tree: each path's newest version across the devices
      // (or one device's exactly); `get` brings back the files it names.
      // This index holds what this device took in at its last publish: said when the pointer holds
      // newer rows of another device. Asked beside the fetches, and bounded: it never holds them up.
      const asksAhead = past === undefined && (deviceId === undefined || deviceId !== own)
      // A hint's command says where this run writes, or pasted as shown it writes elsewhere.
      const again = { to: options.to, config: options.config, from: options.from }
      let tree: ReturnType<typeof selectTree> | undefined
      let rows: readonly Entry[]
      try {
        tree = prefix ? selectTree(index, { prefixes: paths, deviceId, deleting: options.delete === true, again }) : undefined
        rows = tree?.rows ?? selectRows(index, { paths, prefix, deviceId, own, again })
      } catch (err) {
        // Not in this index: a publish it has not taken in may hold it, and the user is told so.
        if (err instanceof PathNotFoundError && asksAhead) noteAhead(await pointerAhead(repository, index, own, deviceId), options.json === true)
        throw err
      }
      const ahead = asksAhead ? pointerAhead(repository, index, own, deviceId) : Promise.resolve(undefined)
      if (tree !== undefined && options.dryRun === true) {
        noteAhead(await ahead, options.json === true)
        await (await import('./restore-files.js')).printPlan({ index, config, tree, paths, options, own })
        return
      }
      // Asked by name and found only on another device: say so when this device deleted it since.
      if (!prefix && deviceId === undefined && options.json !== true) for (const note of olderThanOwnDeletion(index, rows, own, again)) process.stderr.write(`cidsync: note: ${safeLines(note)}\n`)
      if (past !== undefined && options.json !== true) process.stderr.write(`from the publish of ${safeText(past.at)} (${safeText(past.cid)})\n`)
      // `--delete` first: what the tree does not have goes before its directories get their mtimes.
      const { outcomes: deleted, ownKept } = tree !== undefined && options.delete === true
        ? await (await import('./restore-files.js')).deleteExtra({ config, index, own, tree, paths, options })
        : { outcomes: [], ownKept: [] }
      const notes: string[] = []
      // A record whose objects are gone gives way to a newer one of the same content (a repack's).
      const sources = recordSources(repository, index, past === undefined ? {} : { past: past.cid, local: indexPath(config.stateDir) })
      const shown = progressReporter({ json: options.json === true, tty: process.stderr.isTTY === true })
      // Counted for a Ctrl-C's message: the outcomes are not answered when the run is stopped.
      const count = { files: 0, placed: 0, stopping: false }
      const onProgress = (event: GetFilesProgress): void => {
        if (event.type === 'get:start') count.files = event.detail.files
        if (event.type === 'get:file' && PLACED.has(event.detail.outcome)) count.placed++
        // Once stopping, a terminal's bar is not drawn again over the lines that say so.
        if (!count.stopping || options.json === true) shown(event)
      }
      const outcomes = await untilInterrupted(async (signal) => await getFiles(repository, index, { rows, to: options.to, overwrite: options.overwrite, own, signal, onProgress, onNote: (note) => { notes.push(note) }, records: sources.records, fallbacks: sources.fallbacks })
        .catch((err: unknown) => { throw signal.aborted ? interrupted(signal, count, options.json === true) : err }), (signal) => {
        // A line of its own, after the progress bar's: the batch being synced may take a while.
        count.stopping = true
        process.stderr.write(`${process.stderr.isTTY ? '\n' : ''}cidsync: ${signal === 'SIGINT' ? 'Ctrl-C' : signal}: stopping once the files being made durable are in place (again to stop at once, leaving temp files the next run removes)\n`)
      })
        .finally(() => { sources.close() })
      const unfetched = outcomes.filter(o => o.outcome === 'failed' && FROM_SERVICE.has(o.code ?? ''))
      const first = unfetched[0]
      // The next home is asked for them; the files already written are skipped there as already right.
      if (fallsBack && where !== lastSource && first !== undefined) {
        throw new GatewayFetchError(`${countOf(unfetched.length, 'file', 'files')} could not be fetched from ${where} (${safeText(first.path)}: ${safeLines(first.reason ?? 'failed')})`)
      }
      // Every file is in place: a stop now skips the note's wait, and the summary is still said.
      await untilInterrupted(async (stopped) => {
        failpoint('get:reporting')
        noteAhead(await unlessStopped(ahead, stopped), options.json === true)
        const { reportTree, reportNotes } = await import('./restore-files.js')
        if (tree !== undefined) await reportTree({ tree, json: options.json === true, index, outcomes, deleted, ownKept, deleting: options.delete === true, config, to: options.to })
        await reportNotes(notes, options.json === true)
        const deletion = options.delete === true ? { deleted: deleted.filter(o => o.outcome !== 'failed').length, kept: ownKept.length, failed: deleted.filter(o => o.outcome === 'failed') } : undefined
        report(outcomes, options.json === true, where === 'the primary' ? '' : ` from ${where}`, tree === undefined, deletion)
      })
    } finally {
      if (past === undefined) index.close()
    }
  })
}

/** Outcomes that leave a file in its place. */
const PLACED = new Set(['written', 'already-there'])

/**
 * What a Ctrl-C (or SIGTERM) left: the files done (written, or found right) are counted as this run
 * told them. Files already right that it had not yet looked at are not, so nothing is called missing.
 * With `json`, a last line of type `stopped` says the same on stdout.
 */
function interrupted (signal: AbortSignal, count: { readonly files: number, readonly placed: number }, json: boolean): InterruptedError {
  const by = signal.reason instanceof StoppedBy ? signal.reason.signal : 'SIGINT'
  // Where the summary would be: a reader of the lines learns the run was stopped, not cut short.
  if (json) process.stdout.write(JSON.stringify({ type: 'stopped', signal: by, files: count.files, done: count.placed }) + '\n')
  const rest = count.placed >= count.files ? 'the symlinks and directories after them may not all be made' : 'the rest were not finished'
  return new InterruptedError(`stopped by ${by}: ${formatCount(count.placed)} of ${countOf(count.files, 'file', 'files')} done (written, or found right); ${rest}, and no temp file stays. ` +
    'Run the same command again to finish: it skips what is already right', by)
}

/** How long the note's pointer and manifest reads may take, retries included: past it, no note. */
const NOTE_DEADLINE_MS = 2_000
/** Devices the note names; the rest are counted. A manifest may list thousands. */
const NOTE_DEVICES = 10

/**
 * What the pointer holds past this index, or undefined where nothing is or it cannot be told in
 * {@link NOTE_DEADLINE_MS}: a note, never a failure. Never rejects.
 */
async function pointerAhead (repository: Repository, index: Index, own: string | undefined, only: string | undefined): Promise<PointerAhead | undefined> {
  try {
    const { devicesAhead } = await import('../../sync/index.js')
    const ahead = await devicesAhead(repository, index, own, AbortSignal.timeout(NOTE_DEADLINE_MS))
    const devices = ahead?.devices.filter(d => only === undefined || d.deviceId === only) ?? []
    return ahead === undefined || devices.length === 0 ? undefined : { ...ahead, devices }
  } catch {
    // The files' own fetches say what is wrong with the service.
    return undefined
  }
}

/** Names the devices whose newer rows this index lacks, and how to take them in. */
function noteAhead (ahead: PointerAhead | undefined, json: boolean): void {
  if (ahead === undefined) return
  const shown = ahead.devices.slice(0, NOTE_DEVICES)
  const more = ahead.devices.length - shown.length
  const names = shown.map(d => `${safeText(d.hostname)} (${safeText(d.deviceId)})`).join(', ') + (more > 0 ? ` and ${more} more` : '')
  const text = `the pointer's publish of ${safeText(ahead.at)} holds changes of ${names} that this index has not taken in: ` +
    'files asked for may be newer there. The daemon takes them in at its next publish, as `cidsync snapshot` does now; `--at now` reads that publish instead'
  if (json) process.stdout.write(JSON.stringify({ type: 'note', note: 'pointer-ahead', pointer: ahead.pointer, at: ahead.at, devices: shown.map(d => ({ deviceId: d.deviceId, hostname: safeText(d.hostname) })), more, text }) + '\n')
  else process.stderr.write(`cidsync: note: ${text}\n`)
}

/** A file's failure that is the service's (gone, down, bytes that do not verify): another home may have it. */
const FROM_SERVICE = new Set(['ERR_GATEWAY_FETCH', 'ERR_CONTENT_NOT_FOUND', 'ERR_CONTENT_INTEGRITY', 'ERR_INTEGRITY', 'ERR_SERVICE_DATA_DAMAGED'])

const DAMAGE = new Set(['ERR_CONTENT_INTEGRITY', 'ERR_INTEGRITY', 'ERR_SERVICE_DATA_DAMAGED'])

/** Files not brought back named one a line, at most this many (the rest counted). */
const SHOWN_NOT_DONE = 20

/** What `--delete` did: entries removed, kept as this device's own, and those it could not remove. */
interface Deletion { readonly deleted: number, readonly kept: number, readonly failed: readonly GetOutcome[] }

/**
 * The run's last word: stderr names what was not brought back and what `--delete` could not
 * remove, stdout counts; `--json` ends with a summary line. Either failing exits non-zero.
 * `entries`: count symlinks and directories on the files' line (`get`; a tree's restore has a
 * line of its own).
 */
function report (outcomes: readonly GetOutcome[], json: boolean, from: string, entries: boolean, deletion?: Deletion): void {
  // Files alone: symlinks and directories are counted on a line of their own (restore --files).
  const count = (what: GetOutcome['outcome']): number => outcomes.filter(o => o.outcome === what && o.kind === undefined).length
  const notDone = outcomes.filter(o => o.outcome === 'failed' || o.outcome === 'kept-different' || o.outcome === 'not-stored')
  if (!json) {
    // Names from disk (and targets built of them): shown with control characters neutralised.
    for (const o of notDone.slice(0, SHOWN_NOT_DONE)) process.stderr.write(`cidsync: ${safeText(o.path)}: ${safeLines(o.reason ?? o.outcome)} [${safeText(o.code ?? 'ERR_CIDSYNC')}]\n`)
    // A folder never stored, restored on a new device, is thousands of the same line: the first ones say why.
    if (notDone.length > SHOWN_NOT_DONE) process.stderr.write(`cidsync: ... and ${formatCount(notDone.length - SHOWN_NOT_DONE)} more not brought back (\`--json\` lists each with why)\n`)
    const placed = entries ? outcomes.filter(o => o.kind !== undefined && (o.outcome === 'written' || o.outcome === 'already-there')).length : 0
    const undeleted = deletion?.failed ?? []
    for (const o of undeleted.slice(0, SHOWN_NOT_DONE)) process.stderr.write(`cidsync: ${safeText(o.path)}: ${safeLines(o.reason ?? 'not deleted')} [${safeText(o.code ?? 'ERR_CIDSYNC')}]\n`)
    if (undeleted.length > SHOWN_NOT_DONE) process.stderr.write(`cidsync: ... and ${formatCount(undeleted.length - SHOWN_NOT_DONE)} more not deleted (\`--json\` lists each with why)\n`)
    process.stdout.write(`${countOf(count('written'), 'file', 'files')} written${from}, ${formatCount(count('already-there'))} already right` +
      `${placed === 0 ? '' : `, ${countOf(placed, 'symlink or directory', 'symlinks and directories')} in place`}` +
      `${notDone.length === 0 ? '' : `; not brought back: ${formatCount(count('not-stored'))} not stored, ${formatCount(count('kept-different'))} kept (different local file), ${formatCount(count('failed'))} failed`}\n`)
  }
  if (json) {
    // The last line: each outcome counted, for files and for symlinks and directories apart.
    const tally = (entry: boolean): Record<GetOutcome['outcome'], number> => {
      const counts: Record<GetOutcome['outcome'], number> = { written: 0, 'already-there': 0, 'kept-different': 0, 'not-stored': 0, failed: 0 }
      for (const o of outcomes) if ((o.kind !== undefined) === entry) counts[o.outcome]++
      return counts
    }
    const deleting = deletion === undefined ? {} : { deletion: { deleted: deletion.deleted, kept: deletion.kept, failed: deletion.failed.length } }
    process.stdout.write(JSON.stringify({ type: 'summary', files: tally(false), entries: tally(true), ...deleting }) + '\n')
  }
  if (notDone.length > 0) {
    // Damage (bytes that do not verify, a service data dir that lost what it indexed): exit 4.
    const integrity = outcomes.some(o => o.outcome === 'failed' && DAMAGE.has(o.code ?? ''))
    const files = notDone.every(o => o.kind === undefined)
    throw new FilesNotRestoredError(`${countOf(notDone.length, files ? 'file was' : 'entry was', files ? 'files were' : 'entries were')} not brought back${from} (${json ? 'each in its JSON line, with why' : notDone.length > SHOWN_NOT_DONE ? `the first ${SHOWN_NOT_DONE} named above` : 'each named above'})`, integrity)
  }
  const undeleted = deletion?.failed.length ?? 0
  if (undeleted > 0) {
    throw new ExtraNotDeletedError(`--delete could not remove ${countOf(undeleted, 'local entry', 'local entries')} the restored tree does not have (${json ? 'each in its JSON line of type deleted, with why' : undeleted > SHOWN_NOT_DONE ? `the first ${SHOWN_NOT_DONE} named above` : 'each named above'}); every file was brought back`)
  }
}

const GET_HELP = `
How a file comes back:
PATH is folder/path, as ls prints it.
Each file is fetched through the gateways, decrypted, and checked against the row's CID.
A file that does not match exits 4, and nothing is written.
It is written through a temp file, 0600 until it is checked in place, then renamed.
It gets its recorded mode, its mtime (to the microsecond), and its owner when run as root.
It goes into the folder's configured path, or to DIR/folder/path with --to.
DIR is made if missing; a file at DIR is refused (exit 2).
A directory on the way that is a file or a symlink is never written through (ERR_TARGET_PATH).

Which version:
A file already right is skipped.
A different local file is kept, unless --overwrite.
--at brings the file back as a past publish held it.
For a file deleted since, the error gives the --at that brings it back.
Without --device, each file is the newest across the devices, by when it was indexed there.
Other devices' files are as this index took them in, at this device's last publish.
When the pointer holds newer ones, a note names their devices: --at now reads that publish.
A device that restored an old copy later counts as newer: --device picks one device's.
--from NAME reads that mirror alone; without it, a failing primary falls back to the mirrors.

Progress and exit codes:
A terminal shows a progress bar: files, bytes, rate and ETA.
--json prints a start line with the totals, bytes lines as they are written, and a line per file.
A path the index does not have exits 3.
Files not brought back exit 1, the first 20 named; --json gives each file's outcome and why.
Ctrl-C while files come back stops it cleanly: the files done stay, no temp file does, exit 130.
Run the same command again to finish (a second Ctrl-C stops it at once; SIGTERM exits 143).
With --json, its last line is of type stopped: the signal, the files, and how many are done.
A Ctrl-C once every file is in place skips the pointer's note; the summary is still said.
A Ctrl-C before the first file is asked for, or a second one, ends it at once: no stopped line.`

export function registerGet (program: Command): void {
  program.command('get')
    .description('bring stored files back from the service, verified against their CIDs: into their folders, or under --to DIR')
    .addHelpText('after', GET_HELP)
    .argument('<path...>', 'folder/path as `cidsync ls` prints it')
    .option('--config <path>', 'config file')
    .option('--to <dir>', 'write DIR/folder/path instead of into each folder\'s configured path')
    .option('--at <time>', 'the file as the newest publish at or before this time held it (RFC 3339, a date, an age: 2h, 3d, or now)')
    .option('--device <id>', 'the file as this device holds it (default: the newest across the devices, by when it was indexed; this device\'s on a tie)')
    .option('--overwrite', 'replace a local file that holds other content')
    .option('--from <mirror>', 'read this [[mirrors]] table alone, or a directory store at a path (one holding a /), not the primary (without it, a primary that fails falls back to the mirrors in order)')
    .option('--json', 'JSON lines: progress, each file\'s outcome, a note where the pointer holds newer files, then a summary')
    .action(action(async (paths: string[], options: GetOptions) => { await runGet(options, paths, false) }))
}
