import { mkdirSync } from 'node:fs'
import type { Command } from 'commander'
import { loadConfig } from '../../config/index.js'
import { action } from '../run.js'

async function readStdin (): Promise<string> {
  let text = ''
  for await (const chunk of process.stdin) text += (chunk as Buffer).toString('utf8')
  return text
}

export function registerKey (program: Command): void {
  const key = program.command('key').description('the snapshot encryption key: carry it to another device')
  key.command('export')
    .description('print this device\'s snapshot key (made now if there is none yet); keep it secret')
    .option('--config <path>', 'config file')
    .action(action(async (options: { config?: string }) => {
      const config = loadConfig({ configPath: options.config })
      mkdirSync(config.stateDir, { recursive: true, mode: 0o700 })
      const { exportKey } = await import('../../snapshot/index.js')
      process.stdout.write(`${exportKey(config.stateDir)}\n`)
      if (process.stdout.isTTY === true) process.stderr.write('this is the key to every snapshot of this index: store it like a password\n')
    }))
  key.command('import')
    .description('install a key exported on another device, so its snapshots open here')
    .argument('[key]', 'the exported key; read from standard input when absent or -')
    .option('--config <path>', 'config file')
    .option('--force', 'replace a different key already here')
    .action(action(async (text: string | undefined, options: { config?: string, force?: boolean }) => {
      const config = loadConfig({ configPath: options.config })
      mkdirSync(config.stateDir, { recursive: true, mode: 0o700 })
      const { importKey } = await import('../../snapshot/index.js')
      const id = importKey(config.stateDir, text === undefined || text === '-' ? await readStdin() : text, options.force === true)
      process.stdout.write(`imported key ${id} into ${config.stateDir}\n`)
    }))
}
