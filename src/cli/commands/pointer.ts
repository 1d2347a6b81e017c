import { InvalidArgumentError, type Command } from 'commander'
import { POINTER_NAME_MAX } from '../../config/index.js'
import { UsageError } from '../../errors.js'
import { countOf, printJson } from '../format.js'
import { action } from '../run.js'
import { safeText } from '../safe-text.js'
import { explainMissingPointer, serviceOptions, withService } from '../service-command.js'

/** `--memories`: a count, or the pointer would carry `null` (what JSON makes of NaN). */
function entryCount (text: string): number {
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(Number(text))) throw new InvalidArgumentError('expected a whole number of entries, such as 120')
  return Number(text)
}

/** A namespace or network as the pointer service takes one. */
function pointerName (text: string): string {
  if (text.length === 0 || text.length > POINTER_NAME_MAX) throw new InvalidArgumentError(`expected a name of 1 to ${POINTER_NAME_MAX} characters`)
  return text
}

interface PointerOptions { config?: string, json?: boolean, namespace?: string, network?: string }

const POINTER_PUT_HELP = `
Checks:
put refuses a CID that is not a cidsync snapshot this device can open (exit 2).
Every device's next publish would stop at such a pointer.
--force puts it anyway.`

const POINTER_REPAIR_HELP = `
It looks first:
A pointer that opens here, or none stored, is said to be fine and left alone (exit 0).
Otherwise it asks before it publishes over the pointer; --yes answers for scripts.
status names the pointer when one blocks publishing.`

export function registerPointer (program: Command): void {
  const pointer = program.command('pointer').description('the latest snapshot CID per namespace and network, by hand')
  serviceOptions(pointer.command('get').description('what the pointer holds (exit 3 when nothing is stored)'))
    .option('--namespace <name>', 'default: the config\'s namespace', pointerName)
    .option('--network <name>', 'default: the config\'s network', pointerName)
    .action(action(async (options: PointerOptions) => {
      await withService(options, async ({ clients }, config) => {
        const current = await clients.pointers.current(options.namespace ?? config.namespace, options.network ?? config.network)
          .catch((err: unknown) => { throw explainMissingPointer(err, config) })
        if (options.json === true) printJson(current)
        else process.stdout.write(safeText(`${current.snapshotCid}  ${current.namespace}#${current.network}  engine ${current.engine}${current.memories === undefined ? '' : `  ${countOf(current.memories, 'entry', 'entries')}`}${current.updatedAt === undefined ? '' : `  ${current.updatedAt}`}`) + '\n')
      })
    }))
  serviceOptions(pointer.command('put').description('overwrite the pointer').addHelpText('after', POINTER_PUT_HELP).argument('<cid>', 'the snapshot CID'))
    .option('--namespace <name>', 'default: the config\'s namespace', pointerName)
    .option('--network <name>', 'default: the config\'s network', pointerName)
    .option('--engine <engine>', 'the engine that made it (default: what it is; with --force, cidsync-sqlite/2)')
    .option('--memories <count>', 'entries in the snapshot (default: what the snapshot holds)', entryCount)
    .option('--force', 'put it even if it is not a cidsync snapshot this device can open')
    .action(action(async (cid: string, options: PointerOptions & { engine?: string, memories?: number, force?: boolean }) => {
      // Refused before the service is reached: a malformed CID is a usage error (exit 2).
      const { checkedCid } = await import('../../remote/index.js')
      checkedCid(cid, 'snapshot CID')
      // The engine name lives with the snapshot format; loaded here, not at start-up.
      let engine = options.engine ?? (await import('../../snapshot/index.js')).ENGINE
      await withService(options, async ({ clients, repository }, config) => {
        let memories = options.memories
        // Naming the engine checks nothing: only --force puts a CID unchecked (another namespace's publish included).
        if (options.force !== true) {
          const { checkSnapshotCid } = await import('./pointer-checks.js')
          try {
            const checked = await checkSnapshotCid(repository, cid, { namespace: options.namespace, network: options.network })
            memories ??= checked.entries
            engine = options.engine ?? checked.engine
          } catch (err) {
            throw new UsageError(`refused: ${cid} is not a cidsync snapshot this device can open (${(err as Error).message}); every device's next publish would stop at it. Add --force to put it anyway`, { cause: err })
          }
        }
        const input = { snapshotCid: cid, engine, namespace: options.namespace ?? config.namespace, network: options.network ?? config.network, ...(memories === undefined ? {} : { memories }) }
        await clients.pointers.put(input)
        if (options.json === true) printJson(input)
        else process.stdout.write(`${input.namespace}#${input.network} -> ${cid}\n`)
      })
    }))
  pointer.command('repair')
    .description('put this device\'s index (with every other device\'s rows it holds) over a pointer whose snapshot is missing or cannot be opened')
    .addHelpText('after', POINTER_REPAIR_HELP)
    .option('--config <path>', 'config file')
    .option('--json', 'print JSON')
    .option('--yes', 'do not ask for confirmation')
    .action(action(async (options: { config?: string, json?: boolean, yes?: boolean }) => {
      const { repairPointer } = await import('./pointer-repair.js')
      await repairPointer(options)
    }))
}
