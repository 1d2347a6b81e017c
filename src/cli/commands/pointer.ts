import { InvalidArgumentError, type Command } from 'commander'
import { printJson } from '../format.js'
import { action } from '../run.js'
import { serviceOptions, withService } from '../service-command.js'

/** `--memories`: a count, or the pointer would carry `null` (what JSON makes of NaN). */
function entryCount (text: string): number {
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(Number(text))) throw new InvalidArgumentError('expected a whole number of entries, such as 120')
  return Number(text)
}

interface PointerOptions { config?: string, json?: boolean, namespace?: string, network?: string }

export function registerPointer (program: Command): void {
  const pointer = program.command('pointer').description('the latest snapshot CID per namespace and network, by hand')
  serviceOptions(pointer.command('get').description('what the pointer holds (exit 3 when nothing is stored)'))
    .option('--namespace <name>', 'default: the config\'s namespace')
    .option('--network <name>', 'default: the config\'s network')
    .action(action(async (options: PointerOptions) => {
      await withService(options, async ({ clients }, config) => {
        const current = await clients.pointers.current(options.namespace ?? config.namespace, options.network ?? config.network)
        if (options.json === true) printJson(current)
        else process.stdout.write(`${current.snapshotCid}  ${current.namespace}#${current.network}  engine ${current.engine}${current.memories === undefined ? '' : `  ${current.memories} entries`}${current.updatedAt === undefined ? '' : `  ${current.updatedAt}`}\n`)
      })
    }))
  serviceOptions(pointer.command('put').description('overwrite the pointer').argument('<cid>', 'the snapshot CID'))
    .option('--namespace <name>', 'default: the config\'s namespace')
    .option('--network <name>', 'default: the config\'s network')
    .option('--engine <engine>', 'the index engine that made the snapshot (default: cidsync-sqlite/1)')
    .option('--memories <count>', 'entries in the snapshot', entryCount)
    .action(action(async (cid: string, options: PointerOptions & { engine?: string, memories?: number }) => {
      // Refused before the service is reached: a malformed CID is a usage error (exit 2).
      const { checkedCid } = await import('../../remote/index.js')
      checkedCid(cid, 'snapshot CID')
      // The engine name lives with the snapshot format; loaded here, not at start-up.
      const engine = options.engine ?? (await import('../../snapshot/index.js')).ENGINE
      await withService(options, async ({ clients }, config) => {
        const input = { snapshotCid: cid, engine, namespace: options.namespace ?? config.namespace, network: options.network ?? config.network, ...(options.memories === undefined ? {} : { memories: options.memories }) }
        await clients.pointers.put(input)
        if (options.json === true) printJson(input)
        else process.stdout.write(`${input.namespace}#${input.network} -> ${cid}\n`)
      })
    }))
}
