import { statSync } from 'node:fs'
import type { Command } from 'commander'
import { UsageError } from '../../errors.js'
import { loadConfig } from '../../config/index.js'
import { countOf, formatBytes } from '../format.js'
import { action } from '../run.js'
import { withService } from '../service-command.js'

interface ImportOptions { car: string, force?: boolean, config?: string, json?: boolean }

const IMPORT_HELP = `
What it does:
Every block is checked against its CID before it goes to the service.
It checks that the CAR's chain opens under this device's key and belongs to this namespace.
It asks for deals for the objects the chain names, then moves the pointer to the CAR's publish.
Any other DAG in the CAR is named and left without a deal.
An object that already has a deal is not asked again, and is counted.
Run it again after a failure or a kill, and it finishes.
--car takes a path: --car - is refused (exit 2).

Refusals:
A chain older than the pointer's, or another line, is refused unless --force.
A block that does not match its CID exits 4, and the pointer is untouched.
So does a chain of another key or another namespace.
docs/exits.md says more.`

export function registerImport (program: Command): void {
  program.command('import')
    .description('put a CAR file from `cidsync export` on the configured service, check it, ask for deals, and move the pointer to it')
    .addHelpText('after', IMPORT_HELP)
    .requiredOption('--car <file>', 'the CAR file to import')
    .option('--force', 'move the pointer even when it holds a publish the CAR\'s history does not (an older CAR sets it back)')
    .option('--config <path>', 'config file')
    .option('--json', 'print a JSON line per step, then the result')
    .action(action(async (options: ImportOptions) => {
      // Standard input is not read: a file named "-" would be, silently (./- still names one).
      if (options.car === '-') throw new UsageError('--car -: the CAR is read from a file, not from standard input: give its path (./- for a file named -)')
      // A config that does not load is said before anything about the CAR.
      loadConfig({ configPath: options.config })
      // Not there is a mistyped path (exit 2), not a CAR that fails its checks (exit 4).
      const found = statSync(options.car, { throwIfNoEntry: false })
      if (found === undefined) throw new UsageError(`${options.car}: no such file: give the CAR file \`cidsync export --car FILE\` wrote`)
      if (!found.isFile()) throw new UsageError(`${options.car} is not a file: give the CAR file \`cidsync export --car FILE\` wrote`)
      const tty = process.stderr.isTTY === true && options.json !== true
      let last = 0
      await withService(options, async ({ repository }) => {
        const { importCar } = await import('../../exits/index.js')
        const result = await importCar(repository, {
          file: options.car, force: options.force === true,
          onProgress: (event) => {
            if (options.json === true) { if (event.type === 'import:step') process.stdout.write(`${JSON.stringify({ type: 'step', step: event.detail.step })}\n`); return }
            if (!tty || (event.type === 'import:upload' && Date.now() - last < 100)) return
            last = Date.now()
            process.stderr.write(`\r${event.type === 'import:step' ? event.detail.step : `upload: ${formatBytes(event.detail.sent)} of ${formatBytes(event.detail.total)}`}          `)
          }
        })
        if (tty) process.stderr.write('\n')
        if (options.json === true) { process.stdout.write(`${JSON.stringify({ type: 'done', ...result })}\n`); return }
        process.stdout.write(`imported ${result.publish} (the publish of ${result.at}): ${countOf(result.objects, 'object', 'objects')}, ${countOf(result.blocks, 'block', 'blocks')}, ${formatBytes(result.bytes)}; ` +
          `${countOf(result.publishes, 'publish', 'publishes')} and ${countOf(result.segments, 'segment', 'segments')} checked; ${countOf(result.dealsAsked, 'deal', 'deals')} asked for${result.dealsSkipped > 0 ? ` (${countOf(result.dealsSkipped, 'object', 'objects')} already had one, not asked again)` : ''}; ` +
          `${result.moved ? `the pointer moved there${result.previous === null ? '' : ` from ${result.previous}`}` : 'the pointer already held it'}\n`)
        if (result.unnamed.length > 0) {
          // On the service now, but nobody's: said, so a deal or a mirror copy is not assumed for it.
          const shown = result.unnamed.slice(0, 10)
          process.stdout.write(`${countOf(result.unnamed.length, 'other object', 'other objects')} of the CAR ${result.unnamed.length === 1 ? 'is' : 'are'} not named by its chain (not a publish, segment or stored file of it): left without a deal and not copied to mirrors: ${shown.join(', ')}${result.unnamed.length > shown.length ? `, and ${result.unnamed.length - shown.length} more (--json lists them)` : ''}\n`)
        }
      })
    }))
}
