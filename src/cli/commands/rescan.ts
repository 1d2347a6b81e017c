import type { Command } from 'commander'
import { loadConfig } from '../../config/index.js'
import type { DriftResult } from '../../watch/index.js'
import { printJson } from '../format.js'
import { action } from '../run.js'
import { safeText } from '../safe-text.js'

/** The drift check in words: what was repaired where, and which folders could not be checked. */
function describe (result: DriftResult): string {
  const lines = [`${result.repaired === 0 ? 'the index matches the folders' : `repaired ${result.repaired} difference${result.repaired === 1 ? '' : 's'} between the index and the folders`} (${result.ms} ms)`]
  for (const folder of result.folders) {
    lines.push(folder.repaired === null
      ? `  ${safeText(folder.name)}: not checked (not watched, or its folder is missing: see cidsync status)`
      : `  ${safeText(folder.name)}: ${folder.repaired} repaired`)
  }
  return lines.join('\n') + '\n'
}

export function registerRescan (program: Command): void {
  program.command('rescan')
    .description('ask the running daemon to walk every folder afresh now and repair what the index missed (the drift check)')
    .option('--config <path>', 'config file')
    .option('--json', 'print JSON')
    .action(action(async (options: { config?: string, json?: boolean }) => {
      const config = loadConfig({ configPath: options.config })
      const { postToDaemon } = await import('../status-client.js')
      const result = JSON.parse(await postToDaemon(config, '/rescan')) as DriftResult
      if (options.json === true) printJson(result)
      else process.stdout.write(describe(result))
    }))
}
