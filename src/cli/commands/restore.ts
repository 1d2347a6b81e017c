import type { Command } from 'commander'
import { loadConfig } from '../../config/index.js'
import { LockHeldError, UsageError } from '../../errors.js'
import { countOf, formatBytes, formatCount, printJson } from '../format.js'
import { action } from '../run.js'
import { safeText } from '../safe-text.js'
import { parseTimeArg } from '../time-arg.js'
import { explainMissingPointer } from '../service-command.js'
import { readFrom } from '../mirror-read.js'
import type { ObjectStore } from '../../store/index.js'
import { lagLine, mirrorLag } from '../mirror-lag.js'
import { makeDirsSync } from '../../util/make-dirs.js'
import { againOptions } from '../../util/shell-word.js'
import type { RestoreProgress } from '../../sync/index.js'

interface RestoreOptions { device?: string, delete?: boolean, allowOlder?: boolean, from?: string, files?: string | boolean, to?: string, overwrite?: boolean, config?: string, json?: boolean, namespace?: string, network?: string, cid?: string, at?: string, force?: boolean, dryRun?: boolean, asDevice?: string, allowUnencrypted?: boolean }

function progressBar (): ((event: RestoreProgress) => void) | undefined {
  if (process.stderr.isTTY !== true) return undefined
  let last = 0
  return ({ detail: { received, total } }) => {
    const now = Date.now()
    if (now - last < 100 && received !== total) return
    last = now
    const bar = total === undefined ? '' : `[${'#'.repeat(Math.round(received / total * 30)).padEnd(30, '.')}] `
    // Padded: the line is redrawn in place, and a shorter size would leave the end of a longer one.
    process.stderr.write(`\rfetching ${bar}${formatBytes(received)}${total === undefined ? '' : ` of ${formatBytes(total)}`}   `)
    if (received === total) process.stderr.write('\n')
  }
}

/** The state dir's lock; a daemon holding it is to be stopped (another state dir would restore somewhere else). */
function lockForRestore<T> (acquire: (stateDir: string) => T, stateDir: string): T {
  try {
    return acquire(stateDir)
  } catch (err) {
    if (!(err instanceof LockHeldError)) throw err
    throw new LockHeldError(err.lockPath, err.holder,
      'restore replaces the index that daemon writes: stop it (`systemctl --user stop cidsync`, `sudo systemctl stop cidsync` for the system service, or Ctrl-C where it runs in a terminal), then run restore again, and start the daemon after')
  }
}

const RESTORE_HELP = `
The index:
It comes from the pointer, from --cid, or from the newest publish at or before --at.
--cid takes a publish's manifest, or an older cidsync-sqlite/1 snapshot.
Each segment is fetched through the gateways, verified against its CID, decrypted and checked.
The index is built aside and swapped in with one rename, so a killed restore leaves an index.
--dry-run says what it would install, and changes nothing.

Before and after:
Stop the daemon first: restore refuses while one runs on the state dir.
An existing index needs --force; it is kept as a backup, and the 3 newest backups are kept.
The deals this device asked for, and the account's mirrored side, carry over.
This device keeps its own device id, unless --as-device names one to continue as.
A snapshot with no cipher is refused while this device encrypts, unless --allow-unencrypted.
Start the daemon again after: it rescans the folders against the restored index.

The files:
restore installs the list of files; restore --files brings the files themselves back.
It makes the publish's tree, or the part under a folder/dir prefix.
That is stored files, symlinks and directories, with their modes, and owners when run as root.
Each path takes its newest version across the devices, and the paths they disagree on are named.
--device takes one device's tree instead.
Other devices' files are as this index took them in, at this device's last publish.
When the pointer holds newer ones, a note names their devices (with --json, a line of type note).
--delete removes local entries the tree does not have; one no other device had as it is
(made or edited here) is kept: --delete --overwrite removes it too. Try --dry-run first.
With --json, each removal is a line of type deleted, and the summary counts them under deletion.
An entry --delete could not remove is named with why, and the run exits 1 (ERR_NOT_DELETED).
--dry-run --json prints a line of type plan for each entry, then a summary that counts them.
It writes each file as cidsync get does (cidsync help get).
docs/content-format.md, "Across devices", says more.

Mirrors:
--from NAME reads that mirror alone, not the primary.
Without --from, a failing primary falls back to the mirrors in the config's order, saying so.
All of them failing exits 1 (ERR_MIRRORS_FAILED), naming each.
A mirror's publish older than this device's last known pointer is refused (ERR_MIRROR_BEHIND).
--allow-older installs it anyway.
docs/mirrors.md says more.

Exit codes:
3 when nothing is stored, or nothing that early for --at.
4 when a segment does not verify or open, or inflates past its bound.
4 too for a segment with no cipher while this device encrypts.
130 when Ctrl-C stops restore --files while it brings files back (143 for SIGTERM): run it again.
With --json, its last line is then of type stopped: the signal, the files, how many are done.
A second Ctrl-C ends it at once, with no such line: the next run removes its temp files.`

export function registerRestore (program: Command): void {
  program.command('restore')
    .description('install the index from the pointer (or a given CID): fetch, verify, decrypt, check, swap in. It lists the files; --files brings the files themselves back, where their content is stored')
    .addHelpText('after', RESTORE_HELP)
    .option('--config <path>', 'config file')
    .option('--namespace <name>', 'default: the config\'s namespace')
    .option('--network <name>', 'default: the config\'s network')
    .option('--cid <cid>', 'restore this publish (a manifest, or an older cidsync-sqlite/1 snapshot) instead of the pointer\'s; not with --files, which takes --at')
    .option('--at <time>', 'restore the index as the newest publish at or before this time saw it: RFC 3339 (2026-11-20T08:00:00Z), a date, an age (90m, 2h, 3d, 1w), or now; see `cidsync history`')
    .option('--force', 'replace an existing index (kept as a backup beside it; the 3 newest backups are kept)')
    .option('--allow-unencrypted', 'accept a snapshot with no cipher although this device encrypts (only if a device of yours publishes with encryption = "none")')
    .option('--dry-run', 'say what would be fetched and replaced, and do nothing')
    .option('--as-device <id>', 'continue as a device the restored index knows')
    .option('--files [prefix]', 'bring stored files back (all, or those under folder/path PREFIX) instead of the index: into each folder\'s path, or under --to')
    .option('--to <dir>', 'with --files: write DIR/folder/path')
    .option('--from <mirror>', 'read this [[mirrors]] table alone, or a directory store at a path (one holding a /), not the primary (without it, a primary that fails falls back to the mirrors in order)')
    .option('--allow-older', 'install a mirror\'s publish even when it is older than this device\'s last known pointer (the mirror lags; without this such a restore is refused)')
    .option('--overwrite', 'with --files: replace local files that hold content no publish has (local changes)')
    .option('--device <id>', 'with --files: restore this device\'s tree exactly (default: each path\'s newest version across the devices)')
    .option('--delete', 'with --files: remove local files and directories the restored tree does not have (ignored paths, and unless --overwrite those no other device had as they are, are kept); try --dry-run first')
    .option('--json', 'print JSON')
    .action(action(async (options: RestoreOptions) => {
      if (options.files !== undefined) {
        const clash = (['cid', 'force', 'asDevice', 'namespace', 'network', 'allowUnencrypted', 'allowOlder'] as const).filter(k => options[k] !== undefined)
        if (clash.length > 0) {
          const byCid = clash.includes('cid') ? '. For the files of one publish, give its time with --at: `cidsync history` lists each with its time' : ''
          throw new UsageError(`--files brings files back and leaves the index alone: it does not take --${clash.map(k => k.replace(/[A-Z]/g, c => `-${c.toLowerCase()}`)).join(', --')}${byCid}`)
        }
        const { runGet } = await import('./get.js')
        await runGet(options, [typeof options.files === 'string' ? options.files : ''], true)
        return
      }
      if (options.to !== undefined || options.overwrite !== undefined || options.device !== undefined || options.delete !== undefined) throw new UsageError('--to, --overwrite, --device and --delete go with --files')
      const config = loadConfig({ configPath: options.config })
      const at = options.at === undefined ? undefined : parseTimeArg(options.at)
      const { acquireLock } = await import('../../state-lock/index.js')
      makeDirsSync(config.stateDir, 0o700)
      const { restore, SyncStoreOwner } = await import('../../sync/index.js')
      // The command's one sync store, for every home it reads from (opened on first use); closed when it ends.
      const syncState = new SyncStoreOwner(config.stateDir)
      // No daemon may write the index while it is replaced: take its lock (a running one is named).
      const lock = options.dryRun === true ? undefined : lockForRestore(acquireLock, config.stateDir)
      try {
        await readFrom(config, { from: options.from, fallBack: true }, async ({ clients, describe, repository }, where) => {
          // A mirror's pointer may lag the primary's: its publish must not pass for the latest.
          const lag = where === 'the primary' || options.cid !== undefined || options.at !== undefined ||
            (options.namespace ?? config.namespace) !== config.namespace || (options.network ?? config.network) !== config.network
            ? undefined
            : await mirrorLag(config, clients, where, options.allowOlder === true)
          const result = await restore({ repository, syncState }, {
            namespace: options.namespace ?? config.namespace, network: options.network ?? config.network, cid: options.cid, at, mirror: where === 'the primary' ? undefined : where,
            force: options.force, dryRun: options.dryRun, allowUnencrypted: options.allowUnencrypted, asDevice: options.asDevice, onProgress: progressBar()
          }).catch((err: unknown) => { throw explainMissingPointer(err, config, where === 'the primary' ? undefined : describe, true) })
          if (options.json === true) { printJson({ ...result, from: where, ...(lag === undefined ? {} : { lag: { mirrorCid: lag.cid, known: lag.known, behind: lag.behind } }) }); return }
          const what = `${result.cid}, published ${result.publish.at} by ${result.publish.device.slice(0, 8)}${result.publish.hostname === '' ? '' : ` (${safeText(result.publish.hostname)})`}: ${countOf(result.publish.entries, 'entry', 'entries')}`
          if (at !== undefined && options.at !== undefined && result.after !== undefined) process.stdout.write(`${nearestLine(options.at, at, result.publish.at, result.after)}\n`)
          if (result.dryRun) {
            process.stdout.write(`would install ${what}${where === 'the primary' ? '' : ` from ${where}`}\n${lag === undefined ? '' : `${lagLine(where, lag)}\n`}${result.backup === undefined ? 'into an empty state dir' : `and replace the index (kept as a backup${options.force === true ? '' : '; the real run needs --force'})`}; nothing was changed. It only replaces the index: stop the daemon first, and note that its next start rescans the folders against it\n`)
            return
          }
          process.stdout.write(`restored ${what}${where === 'the primary' ? '' : ` from ${where}`}` +
            `${result.backup === undefined ? '' : `; the old index is at ${result.backup}`}\n${lag === undefined ? '' : `${lagLine(where, lag)}\n`}the next \`cidsync daemon\` rescans the folders against it\n` +
            `${await filesHint(config.stateDir, options.from ?? (where.startsWith('mirror ') ? where.slice('mirror '.length) : undefined), repository.objects, options.config)}\n`)
        })
      } finally {
        syncState.close()
        lock?.release()
      }
    }))
}

/**
 * What `--at` found: the publish at or before the time asked, and the next one after it. After a
 * forget, the time asked may have been a publish that is gone: both nearest kept ones are named.
 */
export function nearestLine (typed: string, asked: Date, found: string, after: { readonly next: { readonly at: string, readonly cid: string } | undefined, readonly forgotten: boolean }): string {
  // A time is taken to the end of its second: a publish within that second is the one asked for.
  const exact = Math.floor(Date.parse(found) / 1000) === Math.floor(asked.getTime() / 1000)
  const head = `--at ${safeText(typed)}: ${exact ? 'the publish of that time' : `the nearest publish before it is of ${found}`}`
  const next = after.next === undefined ? '; none is newer' : `; the next is of ${after.next.at} (\`--cid ${after.next.cid}\`)`
  const gone = after.forgotten && !exact ? '. A `cidsync forget` may have removed the publishes between them' : ''
  return `${head}${next}${gone}`
}

/**
 * The line {@link filesHint} prints for an index of `files` files, `stored` of them with their
 * content stored. `from`: the mirror or directory the index came from, which the files come from too.
 */
export function restorableHint (files: number, stored: number, from?: string, config?: string): string {
  if (stored === 0) return `it lists ${countOf(files, 'file', 'files')}; none has its content stored (\`store = true\` on a folder of the device that has them), so no file can be brought back`
  const command = `cidsync restore --files${againOptions({ config, from })} [--to DIR]`
  return `it lists ${countOf(files, 'file', 'files')}, not ${files === 1 ? 'its' : 'their'} bytes; ${formatCount(stored)} of them ${stored === 1 ? 'has its' : 'have their'} content stored: \`${command}\` brings ${stored === 1 ? 'it' : 'them'} back`
}

/**
 * What a restore of the index leaves to do for the files themselves: it installs the list of
 * them, not their bytes, which `restore --files` brings back where their content is stored.
 */
async function filesHint (stateDir: string, from: string | undefined, objects: ObjectStore, config?: string): Promise<string> {
  const { indexPath, openIndex } = await import('../../index/index.js')
  const index = openIndex(indexPath(stateDir), { readonly: true })
  try {
    // Counted in SQL: reading 1,000,000 rows out to count them took longer than the restore itself.
    const { files, stored } = index.content.restorable()
    const hint = restorableHint(files, stored, from, config)
    // A directory may hold the index without the content (an export without --content). A service
    // mirror is not asked: its `has` walks the uploads listing.
    if (from === undefined || !from.includes('/') || stored === 0) return hint
    const sample = index.content.sampleStored(CONTENT_SAMPLE, Number.MAX_SAFE_INTEGER)
    let held = 0
    for (const file of sample) {
      const first = (JSON.parse(file.objects) as Array<[string, number, number]>)[0]?.[0]
      if (first !== undefined && await objects.has(first).catch(() => false)) held++
    }
    if (held === sample.length) return hint
    const none = held === 0
    return `${hint}. But ${safeText(from)} holds ${none ? 'none' : `only ${held} of ${sample.length}`} of the content objects sampled${none ? ' (an export without --content?)' : ''}: ` +
      'bring the files back from the primary, or export again with --content'
  } finally {
    index.close()
  }
}

/** Stored files whose first object is looked for on a mirror or directory after a restore from it. */
const CONTENT_SAMPLE = 8
