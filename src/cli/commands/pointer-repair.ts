import { createInterface } from 'node:readline/promises'
import { loadConfig } from '../../config/index.js'
import { UsageError } from '../../errors.js'
import { countOf, printJson } from '../format.js'
import { publishOnce } from './snapshot.js'

async function confirm (question: string): Promise<boolean> {
  const prompt = createInterface({ input: process.stdin, output: process.stderr })
  try {
    return /^y(es)?$/i.test((await prompt.question(question)).trim())
  } finally {
    prompt.close()
  }
}

/**
 * `cidsync pointer repair`: after confirming, publishes this device's index over the pointer
 * without merging the snapshot it names when that snapshot cannot be used (missing, foreign, or
 * not openable with this key). Nothing of other devices is lost that this device holds: its index
 * has every row it merged or restored before. A usable pointer is published over normally.
 */
export async function repairPointer (options: { config?: string, json?: boolean, yes?: boolean }): Promise<void> {
  const config = loadConfig({ configPath: options.config })
  if (options.yes !== true) {
    if (process.stdin.isTTY !== true) throw new UsageError('pointer repair replaces what the pointer names: add --yes to confirm (no terminal to ask on)')
    const question = `The pointer for ${config.namespace} on ${config.network} will name this device's index instead (every row it holds, of every device); ` +
      'a snapshot there that cannot be opened is left behind. Go on? [y/N] '
    if (!await confirm(question)) throw new UsageError('not confirmed: nothing was changed')
  }
  const published = await publishOnce(config, { repairPointer: true })
  if (options.json === true) printJson(published)
  else process.stdout.write(`${config.namespace}#${config.network} -> ${published.cid}  ${countOf(published.entries, 'entry', 'entries')}\n`)
}
