import { createInterface } from 'node:readline/promises'
import { loadConfig, type Config } from '../../config/index.js'
import { PointerNotFoundError, SnapshotUnencryptedError, UsageError } from '../../errors.js'
import { countOf, printJson } from '../format.js'
import { withService } from '../service-command.js'
import { publishOnce } from './snapshot.js'

async function confirm (question: string): Promise<boolean> {
  const prompt = createInterface({ input: process.stdin, output: process.stderr })
  try {
    return /^y(es)?$/i.test((await prompt.question(question)).trim())
  } finally {
    prompt.close()
  }
}

type PointerHealth =
  | { readonly kind: 'none' }
  | { readonly kind: 'fine', readonly cid: string, readonly entries: number }
  | { readonly kind: 'unusable', readonly cid: string, readonly why: string }

/**
 * Opens what the pointer names as a publish would. Only what makes it unusable for good (missing,
 * foreign, damaged) calls for a repair; a network failure, an unencrypted snapshot (its message
 * names the choices) or this device lacking the key is thrown as it is: replacing the pointer
 * would not be the fix.
 */
async function pointerHealth (options: { config?: string }, config: Config): Promise<PointerHealth> {
  return await withService(options, async ({ clients, repository }) => {
    let cid: string
    try {
      cid = (await clients.pointers.current(config.namespace, config.network)).snapshotCid
    } catch (err) {
      if (err instanceof PointerNotFoundError) return { kind: 'none' }
      throw err
    }
    const { checkSnapshotCid } = await import('./pointer-checks.js')
    const { isUnusable, missingKey } = await import('../../sync/index.js')
    try {
      return { kind: 'fine', cid, entries: (await checkSnapshotCid(repository, cid)).entries }
    } catch (err) {
      if (!isUnusable(err) || err instanceof SnapshotUnencryptedError) throw err
      const key = missingKey(err)
      if (key !== undefined) throw key
      return { kind: 'unusable', cid, why: (err as Error).message }
    }
  })
}

/**
 * `cidsync pointer repair`: looks at what the pointer names first. Nothing stored, or a snapshot
 * that opens here: says so and changes nothing (exit 0). One that cannot be used: after
 * confirming, publishes this device's index over it without merging it. Nothing of other devices
 * is lost that this device holds: its index has every row it merged or restored before.
 */
export async function repairPointer (options: { config?: string, json?: boolean, yes?: boolean }): Promise<void> {
  const config = loadConfig({ configPath: options.config })
  const where = `${config.namespace} on ${config.network}`
  const health = await pointerHealth(options, config)
  if (health.kind !== 'unusable') {
    if (options.json === true) printJson({ repaired: false, ...health })
    else if (health.kind === 'none') process.stdout.write(`nothing to repair: nothing is stored for the pointer of ${where} yet (\`cidsync snapshot\` publishes the first)\n`)
    else process.stdout.write(`nothing to repair: the pointer of ${where} names ${health.cid}, which opens here (${countOf(health.entries, 'entry', 'entries')})\n`)
    return
  }
  if (options.yes !== true) {
    const problem = `the pointer of ${where} names ${health.cid}, which cannot be used here: ${health.why}`
    if (process.stdin.isTTY !== true) throw new UsageError(`${problem}. pointer repair replaces it: add --yes to confirm (no terminal to ask on)`)
    const question = `${problem}.\nThe pointer will name this device's index instead (every row it holds, of every device); ` +
      'the snapshot there is left behind. Go on? [y/N] '
    if (!await confirm(question)) throw new UsageError('not confirmed: nothing was changed')
  }
  const published = await publishOnce(config, { repairPointer: true })
  if (options.json === true) printJson({ repaired: true, ...published })
  else process.stdout.write(`${config.namespace}#${config.network} -> ${published.cid}  ${countOf(published.entries, 'entry', 'entries')}\n`)
}
