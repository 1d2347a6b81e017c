import { resolve } from 'node:path'
import type { Command } from 'commander'
import { loadConfig } from '../../config/index.js'
import { UsageError } from '../../errors.js'
import type { ExportDirResult, ExportProgress, ExportResult } from '../../exits/index.js'
import { countOf, formatBytes } from '../format.js'
import { action } from '../run.js'
import { safeText } from '../safe-text.js'
import { directoryStoreReady } from '../store-ready.js'
import { parseTimeArg } from '../time-arg.js'
import { explainMissingPointer, withService } from '../service-command.js'

interface ExportOptions { car?: string, dir?: string, at?: string, content?: boolean, config?: string, json?: boolean }

const EXPORT_HELP = `
The CAR:
It holds every publish and segment of the history; --content adds every stored file's objects.
Its history ends at the pointer's publish, or at the newest one at or before --at.
Its root links every object it holds, so a recursive pin of it keeps them all.
Its blocks are the service's, CID for CID.
So ipfs dag import, or a pinning service's CAR upload, holds and pins the same CIDs.
It is written through a temp file, so FILE is whole or untouched.
That is why --car takes a path: --car - is refused (exit 2).

The directory:
--dir PATH writes the same objects into a directory store instead: a USB disk, a NAS mount.
PATH is made when missing; an empty directory is made a store; any other is refused (exit 2).
A store made before keeps what it holds: a second export writes only what is new.
Its pointer is written last, so restore --from PATH and get --from PATH read it on any device.
A pointer there naming a later publish is never moved back (exit 1).

Exit codes:
1 naming the object when one cannot be fetched; no CAR is written then, no pointer moved.
4 when a gateway's bytes do not hash to their CID.
docs/exits.md says more.`

/** Progress on stderr: JSON lines go to stdout instead, and a pipe gets nothing until the end. */
function progressLine (tty: boolean): { tell: (event: ExportProgress) => void, end: () => void } {
  let last = 0
  let shown: ExportProgress | undefined
  const show = (event: ExportProgress): void => { process.stderr.write(`\rexporting: ${countOf(event.objects, 'object', 'objects')}, ${formatBytes(event.bytes)}   `) }
  return {
    tell: (event) => {
      if (!tty) return
      shown = event
      if (Date.now() - last < 100) return
      last = Date.now()
      show(event)
    },
    // The last line says where it ended, not where the last 100 ms tick left it.
    end: () => { if (tty) { if (shown !== undefined) show(shown); process.stderr.write('\n') } }
  }
}

/** What the objects were: publishes, segments and content objects (or a hint that content was left out). */
function held (result: ExportResult | ExportDirResult, content: boolean): string {
  return `${countOf(result.publishes, 'publish', 'publishes')}, ${countOf(result.segments, 'segment', 'segments')}` +
    (content ? `, ${countOf(result.contentObjects, 'content object', 'content objects')}` : ' (no content: --content adds it)') +
    (content && result.contentPruned > 0 ? ` (${countOf(result.contentPruned, 'object', 'objects')} of forgotten versions ${result.contentPruned === 1 ? 'was' : 'were'} pruned: not exported)` : '')
}

export function registerExport (program: Command): void {
  program.command('export')
    .description('write the whole history as one CAR file, which any IPFS implementation imports with the same CIDs, or into a directory store')
    .addHelpText('after', EXPORT_HELP)
    .option('--car <file>', 'the CAR file to write (replaced only once the new one is whole)')
    .option('--dir <path>', 'the directory store to fill instead (made when missing or empty); restore --from PATH reads it')
    .option('--at <time>', 'export the newest publish at or before this time and its history, instead of the pointer\'s: RFC 3339, a date, an age (90m, 2h, 3d, 1w), or now')
    .option('--content', 'also every stored content object (packs, parts and plain files) the publish\'s records name')
    .option('--config <path>', 'config file')
    .option('--json', 'print a JSON line per object, then the result')
    .action(action(async (options: ExportOptions) => {
      if ((options.car === undefined) === (options.dir === undefined)) throw new UsageError('give exactly one of --car FILE (a CAR file) and --dir PATH (a directory store)')
      // Else a file named "-" appeared in the working directory, exit 0, where tar and `ipfs dag export` users look for stdout.
      if (options.car === '-') throw new UsageError('--car -: the CAR is written to a file, not to standard output (through a temp file, so FILE is whole or untouched): give a path (./- for a file named -)')
      if (options.dir === '-') throw new UsageError('--dir -: the objects are written into a directory store, not to standard output: give a path (./- for a directory named -)')
      const config = loadConfig({ configPath: options.config })
      const at = options.at === undefined ? undefined : parseTimeArg(options.at)
      const json = options.json === true
      const content = options.content === true
      const progress = progressLine(process.stderr.isTTY === true && !json)
      const onObject = (event: ExportProgress): void => {
        if (json) process.stdout.write(`${JSON.stringify({ type: 'object', ...event })}\n`)
        else progress.tell(event)
      }
      await withService(options, async ({ repository }) => {
        const { exportCar, exportDir, refuseMirrorDir } = await import('../../exits/index.js')
        const init = { at, content, onProgress: (event: { readonly detail: ExportProgress }) => { onObject(event.detail) } }
        const missingPointer = (err: unknown): never => { throw explainMissingPointer(err, config) }
        if (options.dir !== undefined) {
          const dir = resolve(options.dir)
          // Before the store is made: a mirror's directory not made yet stays the mirror's to make.
          refuseMirrorDir(config, dir)
          const openToOthers = await directoryStoreReady(dir, 'empty')
          const result = await exportDir(repository, { ...init, dir }).catch(missingPointer)
          progress.end()
          if (json) { process.stdout.write(`${JSON.stringify({ type: 'done', ...result, ...(openToOthers.length > 0 ? { openToOthers } : {}) })}\n`); return }
          process.stdout.write(`exported ${result.publish} (the publish of ${result.at}) to the directory store ${safeText(result.dir)}: ${held(result, content)}; ` +
            `written ${result.written}, already there ${result.present}; ${formatBytes(result.bytesWritten)} written of ${formatBytes(result.bytes)}; ` +
            `${result.pointer === 'moved' ? 'its pointer moved there' : 'its pointer named it already'}. \`cidsync restore --from ${safeText(result.dir)}\` reads it\n`)
          return
        }
        const result = await exportCar(repository, { ...init, file: options.car ?? '' }).catch(missingPointer)
        progress.end()
        if (json) { process.stdout.write(`${JSON.stringify({ type: 'done', ...result })}\n`); return }
        process.stdout.write(`exported ${result.publish} (the publish of ${result.at}) to ${result.file}, rooted at ${result.root}: ${held(result, content)}; ` +
          `${countOf(result.blocks, 'block', 'blocks')}, ${formatBytes(result.bytes)} of objects, ${formatBytes(result.carBytes)} of CAR\n`)
      })
    }))
}
