import type { Command } from 'commander'
import { loadConfig } from '../../config/index.js'
import { UsageError } from '../../errors.js'
import { countOf, formatBytes } from '../format.js'
import { action } from '../run.js'
import { parseTimeArg } from '../time-arg.js'
import { explainMissingPointer, withService } from '../service-command.js'

interface ExportOptions { car: string, at?: string, content?: boolean, config?: string, json?: boolean }

const EXPORT_HELP = `
The CAR:
It holds every publish and segment of the history; --content adds every stored file's objects.
Its history ends at the pointer's publish, or at the newest one at or before --at.
Its root links every object it holds, so a recursive pin of it keeps them all.
Its blocks are the service's, CID for CID.
So ipfs dag import, or a pinning service's CAR upload, holds and pins the same CIDs.
It is written through a temp file, so FILE is whole or untouched.
That is why --car takes a path: --car - is refused (exit 2).

Exit codes:
1 naming the object when one cannot be fetched; no CAR is written then.
4 when a gateway's bytes do not hash to their CID.
docs/exits.md says more.`

export function registerExport (program: Command): void {
  program.command('export')
    .description('write the whole history as one CAR file, which any IPFS implementation imports with the same CIDs')
    .addHelpText('after', EXPORT_HELP)
    .requiredOption('--car <file>', 'the CAR file to write (replaced only once the new one is whole)')
    .option('--at <time>', 'export the newest publish at or before this time and its history, instead of the pointer\'s: RFC 3339, a date, or an age (90m, 2h, 3d, 1w)')
    .option('--content', 'also every stored content object (packs, parts and plain files) the publish\'s records name')
    .option('--config <path>', 'config file')
    .option('--json', 'print a JSON line per object, then the result')
    .action(action(async (options: ExportOptions) => {
      // Else a file named "-" appeared in the working directory, exit 0, where tar and `ipfs dag export` users look for stdout.
      if (options.car === '-') throw new UsageError('--car -: the CAR is written to a file, not to standard output (through a temp file, so FILE is whole or untouched): give a path (./- for a file named -)')
      const config = loadConfig({ configPath: options.config })
      const at = options.at === undefined ? undefined : parseTimeArg(options.at)
      const tty = process.stderr.isTTY === true && options.json !== true
      let last = 0
      let shown: { objects: number, bytes: number } | undefined
      const progress = (objects: number, bytes: number): void => { process.stderr.write(`\rexporting: ${countOf(objects, 'object', 'objects')}, ${formatBytes(bytes)}   `) }
      await withService(options, async ({ clients, repository }) => {
        const { exportCar } = await import('../../exits/index.js')
        const result = await exportCar(clients, {
          config, file: options.car, at, content: options.content === true, passphrase: repository.passphrase,
          onObject: (event) => {
            if (options.json === true) { process.stdout.write(`${JSON.stringify({ type: 'object', ...event })}\n`); return }
            if (!tty) return
            shown = event
            if (Date.now() - last < 100) return
            last = Date.now()
            progress(event.objects, event.bytes)
          }
        }).catch((err: unknown) => { throw explainMissingPointer(err, config) })
        // The last line says where it ended, not where the last 100 ms tick left it.
        if (tty) { if (shown !== undefined) progress(shown.objects, shown.bytes); process.stderr.write('\n') }
        if (options.json === true) { process.stdout.write(`${JSON.stringify({ type: 'done', ...result })}\n`); return }
        process.stdout.write(`exported ${result.publish} (the publish of ${result.at}) to ${result.file}, rooted at ${result.root}: ${countOf(result.publishes, 'publish', 'publishes')}, ` +
          `${countOf(result.segments, 'segment', 'segments')}${options.content === true ? `, ${countOf(result.contentObjects, 'content object', 'content objects')}` : ' (no content: --content adds it)'}; ` +
          `${countOf(result.blocks, 'block', 'blocks')}, ${formatBytes(result.bytes)} of objects, ${formatBytes(result.carBytes)} of CAR\n`)
      })
    }))
}
