import type { Config } from '../../config/index.js'
import type { Index } from '../../index/index.js'
import type { AttrsNote, ExtraEntry, GetOutcome, HeldEntry, SelectedTree } from '../../sync/index.js'
import { countOf, formatCount } from '../format.js'
import { safeLines, safeText } from '../safe-text.js'
import type { GetOptions } from './get-options.js'

/** Whether a symlink at `path` (in its folder) with `target` leads out of its folder: absolute, or up past its top. */
export function leadsOutside (path: string, target: string): boolean {
  if (target.startsWith('/')) return true
  let depth = path.split('/').length - 1
  for (const part of target.split('/')) {
    if (part === '..') depth--
    else if (part !== '.' && part !== '') depth++
    if (depth < 0) return true
  }
  return false
}

/** Lines naming paths, at most this many (the rest counted). */
const SHOWN = 20

interface TreeRun {
  readonly config: Config
  readonly index: Index
  /** This device's id: bytes only its rows name are its own, kept by --delete. */
  readonly own: string | undefined
  readonly tree: SelectedTree
  readonly paths: readonly string[]
  readonly options: GetOptions
}

/** Why --delete keeps a local entry no other device had as it is. */
const OWN_KEPT = 'no other device had it as it is: kept; --delete --overwrite removes it'

/**
 * What `--delete` finds the tree does not have. Without `--overwrite`, an entry no other device had
 * as it is (made or changed here) is kept, as a write keeps a local file no publish holds: answered
 * apart, as `own`.
 */
async function extraOf (run: TreeRun): Promise<{ readonly extra: ExtraEntry[], readonly own: ExtraEntry[] }> {
  const { extraEntries, removableEntry } = await import('../../sync/index.js')
  const removable = async (entry: Pick<ExtraEntry, 'shown' | 'dir' | 'parent' | 'name'>): Promise<HeldEntry | undefined> => await removableEntry(run.index, entry, run.own)
  const found = await extraEntries(run.config, run.options.to, run.tree.rows, run.paths, run.options.overwrite === true ? undefined : removable)
  return { extra: found.filter(e => e.own !== true), own: found.filter(e => e.own === true) }
}

/** `restore --files --dry-run`: what would be written, kept, replaced, left different and deleted; nothing is touched. */
export async function printPlan (run: TreeRun): Promise<void> {
  const { planRestore, deletedStillThere } = await import('../../sync/index.js')
  const planned = await planRestore(run.index, run.config, run.tree.rows, { to: run.options.to, overwrite: run.options.overwrite, own: run.own })
  const { extra, own: ownKept } = run.options.delete === true ? await extraOf(run) : { extra: [], own: [] }
  // Without --delete, what the index holds as deleted but the target still has is kept, and said.
  const keptDeleted = run.options.delete === true ? [] : await deletedStillThere(run.config, run.options.to, run.tree.deleted) ?? []
  const why = 'the index holds it as deleted: --delete removes it'
  const count = (action: string): number => planned.filter(p => p.action === action).length
  const shown = (action: string): string => formatCount(count(action))
  if (run.options.json === true) {
    // Each line a plan's entry (type plan, its action), then a summary that counts them.
    for (const p of planned) process.stdout.write(JSON.stringify({ type: 'plan', ...p }) + '\n')
    for (const e of extra) process.stdout.write(JSON.stringify({ type: 'plan', path: e.shown, kind: e.dir ? 'dir' : 'file', action: 'delete', target: e.path }) + '\n')
    for (const e of ownKept) process.stdout.write(JSON.stringify({ type: 'plan', path: e.shown, kind: e.dir ? 'dir' : 'file', action: 'keep', reason: OWN_KEPT, target: e.path }) + '\n')
    for (const path of keptDeleted) process.stdout.write(JSON.stringify({ type: 'plan', path, action: 'keep', reason: why }) + '\n')
    const would = { write: count('write'), replace: count('replace'), keep: count('keep'), differ: count('differ'), blocked: count('blocked'), 'not-stored': count('not-stored'), delete: extra.length, 'own-kept': ownKept.length, 'deleted-kept': keptDeleted.length }
    process.stdout.write(JSON.stringify({ type: 'summary', dryRun: true, would }) + '\n')
    return
  }
  for (const p of planned) if (p.action !== 'keep') process.stdout.write(`${p.action.padEnd(10)} ${safeText(p.path)}${p.reason === undefined ? '' : `  (${safeLines(p.reason)})`}\n`)
  for (const e of extra) process.stdout.write(`${'delete'.padEnd(10)} ${safeText(e.shown)}\n`)
  for (const e of ownKept) process.stdout.write(`${'keep'.padEnd(10)} ${safeText(e.shown)}  (${OWN_KEPT})\n`)
  for (const path of keptDeleted) process.stdout.write(`${'keep'.padEnd(10)} ${safeText(path)}  (${why})\n`)
  const blocked = count('blocked')
  // Entries, as the plan's lines name them: files, links and directories.
  process.stdout.write(`entries: would write ${shown('write')}, replace ${shown('replace')}, keep ${shown('keep')} as they are, leave ${shown('differ')} different (--overwrite replaces them), ` +
    `${blocked === 0 ? '' : `fail ${formatCount(blocked)} (something in the way it never replaces: move it aside), `}` +
    `${shown('not-stored')} not stored${run.options.delete === true ? `, delete ${formatCount(extra.length)}` : ''}` +
    `${ownKept.length > 0 ? `, keep ${ownKept.length} no other device had as ${ownKept.length === 1 ? 'it is' : 'they are'} (--delete --overwrite removes ${ownKept.length === 1 ? 'it' : 'them'})` : ''}` +
    `${keptDeleted.length > 0 ? `, keep ${keptDeleted.length} the index holds as deleted (--delete removes them)` : ''}; nothing was changed\n`)
}

/**
 * `--delete`: removes the local entries the restored tree does not have, each through its checked
 * directory. Answers each removal's outcome, and the entries kept as no publish holds them.
 */
export async function deleteExtra (run: TreeRun): Promise<{ readonly outcomes: GetOutcome[], readonly ownKept: string[] }> {
  const { removeExtra } = await import('../../sync/index.js')
  const outcomes: GetOutcome[] = []
  const found = await extraOf(run)
  // Deepest first: a directory is removed once what it held is gone.
  const extra = [...found.extra].sort((a, b) => b.shown.length - a.shown.length)
  for (const entry of extra) {
    try {
      await removeExtra(entry)
      outcomes.push({ path: entry.shown, outcome: 'written', reason: 'deleted', target: entry.path })
    } catch (err) {
      const error = err as Error & { code?: unknown }
      outcomes.push({ path: entry.shown, outcome: 'failed', reason: `not deleted: ${error.message}`, code: typeof error.code === 'string' ? error.code : 'ERR_CIDSYNC' })
    }
  }
  return { outcomes, ownKept: found.own.map(e => e.shown).sort() }
}

/** What a tree's restore says beyond its files: paths taken from another device, links and directories, deletions, and what modes and owners could not be. */
export async function reportTree (run: {
  readonly tree: SelectedTree, readonly json: boolean, readonly index: Index, readonly outcomes: readonly GetOutcome[], readonly deleted: readonly GetOutcome[], readonly deleting: boolean
  /** Entries --delete kept: no publish holds them. */
  readonly ownKept: readonly string[]
  readonly config: Config, readonly to: string | undefined
}): Promise<void> {
  if (run.json) {
    for (const d of run.tree.disagreements) process.stdout.write(JSON.stringify({ type: 'newest', path: d.path, device: d.deviceId, deletedThere: run.tree.deleted.has(d.path) }) + '\n')
    for (const d of run.deleted) process.stdout.write(JSON.stringify({ type: 'deleted', path: d.path, outcome: d.outcome === 'failed' ? 'failed' : 'deleted', ...(d.outcome === 'failed' ? { reason: d.reason, code: d.code } : {}) }) + '\n')
    for (const path of run.ownKept) process.stdout.write(JSON.stringify({ type: 'own-kept', path }) + '\n')
    if (!run.deleting) await keptDeleted(run)
    return
  }
  const hosts = new Map(run.index.entries.devices().map(d => [d.id, d.hostname]))
  const from = (id: string): string => `device ${id.slice(0, 8)}${(hosts.get(id) ?? '') === '' ? '' : ` (${safeText(hosts.get(id) ?? '')})`}`
  if (run.tree.disagreements.length > 0) {
    process.stderr.write(`cidsync: ${countOf(run.tree.disagreements.length, 'path differs', 'paths differ')} between devices; each took its newest version (\`--device ID\` restores one device's tree):\n`)
    for (const d of run.tree.disagreements.slice(0, SHOWN)) process.stderr.write(`  ${safeText(d.path)}: from ${from(d.deviceId)}${run.tree.deleted.has(d.path) ? ', deleted there' : ''}\n`)
    if (run.tree.disagreements.length > SHOWN) process.stderr.write(`  ... and ${run.tree.disagreements.length - SHOWN} more (\`--json\` lists each)\n`)
  }
  // A link that leads out of the restored tree is kept as written, and said: it may mean another machine's path.
  const outside = run.tree.rows.filter(r => r.meta?.kind === 'symlink' && leadsOutside(r.path, r.meta.target ?? ''))
  if (outside.length > 0) {
    process.stderr.write(`cidsync: note: ${countOf(outside.length, 'symlink points', 'symlinks point')} outside the restored tree, kept as written:\n`)
    for (const r of outside.slice(0, SHOWN)) process.stderr.write(`  ${safeText(`${r.folder}/${r.path}`)} -> ${safeText(r.meta?.target ?? '')}\n`)
    if (outside.length > SHOWN) process.stderr.write(`  ... and ${outside.length - SHOWN} more\n`)
  }
  const kind = (k: 'symlink' | 'dir'): number => run.outcomes.filter(o => o.kind === k && (o.outcome === 'written' || o.outcome === 'already-there')).length
  const gone = run.deleted.filter(d => d.outcome !== 'failed')
  const removed = gone.length
  // What --delete removed is named, as rsync names it: the user's files are gone from this disk.
  if (removed > 0) {
    process.stderr.write(`cidsync: --delete removed ${countOf(removed, 'local entry', 'local entries')} the restored tree does not have:\n`)
    for (const d of [...gone].sort((a, b) => a.path < b.path ? -1 : 1).slice(0, SHOWN)) process.stderr.write(`  ${safeText(d.path)}\n`)
    if (removed > SHOWN) process.stderr.write(`  ... and ${removed - SHOWN} more (\`--json\` lists each)\n`)
  }
  const kept = run.ownKept.length
  if (kept > 0) {
    process.stderr.write(`cidsync: --delete kept ${countOf(kept, 'local entry', 'local entries')} no other device had as ${kept === 1 ? 'it is' : 'they are'} (made or changed here; --delete --overwrite removes ${kept === 1 ? 'it' : 'them'}):\n`)
    for (const path of run.ownKept.slice(0, SHOWN)) process.stderr.write(`  ${safeText(path)}\n`)
    if (kept > SHOWN) process.stderr.write(`  ... and ${kept - SHOWN} more (\`--json\` lists each)\n`)
  }
  process.stdout.write(`${countOf(kind('symlink'), 'symlink', 'symlinks')} and ${countOf(kind('dir'), 'directory', 'directories')} in place` +
    `${run.deleting ? '' : await keptDeleted(run)}${removed > 0 ? `; ${countOf(removed, 'local entry', 'local entries')} deleted (--delete)` : ''}` +
    `${kept > 0 ? `; ${countOf(kept, 'local entry', 'local entries')} kept, no other device having ${kept === 1 ? 'it' : 'them'} as ${kept === 1 ? 'it is' : 'they are'} (--delete --overwrite removes ${kept === 1 ? 'it' : 'them'})` : ''}\n`)
}

/**
 * What a restore without `--delete` says of the paths the index holds as deleted: those still at
 * the target are kept, named on stderr (JSON lines with `--json`), and counted on the summary.
 */
async function keptDeleted (run: { readonly tree: SelectedTree, readonly config: Config, readonly to: string | undefined, readonly json: boolean }): Promise<string> {
  if (run.tree.deleted.size === 0) return ''
  const { deletedStillThere } = await import('../../sync/index.js')
  const there = await deletedStillThere(run.config, run.to, run.tree.deleted)
  if (there === undefined) {
    const many = run.tree.deleted.size
    return `; ${countOf(many, 'path', 'paths')} the index holds as deleted: a copy at the target, if any, is kept (--delete removes ${many === 1 ? 'it' : 'them'})`
  }
  if (run.json) {
    for (const path of there) process.stdout.write(JSON.stringify({ type: 'deleted-kept', path }) + '\n')
    return ''
  }
  if (there.length === 0) return ''
  process.stderr.write(`cidsync: ${countOf(there.length, 'path', 'paths')} the index holds as deleted ${there.length === 1 ? 'is' : 'are'} still at the target, kept (\`--delete --dry-run\` lists what --delete would remove):\n`)
  for (const path of there.slice(0, SHOWN)) process.stderr.write(`  ${safeText(path)}\n`)
  if (there.length > SHOWN) process.stderr.write(`  ... and ${there.length - SHOWN} more (\`--json\` lists each)\n`)
  return `; ${countOf(there.length, 'path', 'paths')} the index holds as deleted ${there.length === 1 ? 'is' : 'are'} still at the target: kept (--delete removes ${there.length === 1 ? 'it' : 'them'})`
}

/** What a restore could not give entries as recorded, said once each (on stderr, or as JSON lines). */
export async function reportNotes (notes: readonly string[], json: boolean): Promise<void> {
  if (notes.length === 0) return
  const { NOTE_TEXT } = await import('../../sync/index.js')
  for (const n of notes) {
    if (json) process.stdout.write(JSON.stringify({ type: 'note', note: n, text: NOTE_TEXT[n as AttrsNote] }) + '\n')
    else process.stderr.write(`cidsync: note: some entries were not restored exactly: ${NOTE_TEXT[n as AttrsNote]}\n`)
  }
}


