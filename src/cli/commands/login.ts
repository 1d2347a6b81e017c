import { readFileSync, statSync } from 'node:fs'
import type { Command } from 'commander'
import { loadConfig } from '../../config/index.js'
import { ConfigError, UsageError } from '../../errors.js'
import { printJson } from '../format.js'
import { action } from '../run.js'

function walletKeyText (file: string | undefined): string {
  if (file !== undefined) {
    // The wallet key signs for the account: refused when others may read it, like the saved credentials.
    const mode = statSync(file, { throwIfNoEntry: false })?.mode
    if (mode !== undefined && (mode & 0o077) !== 0) {
      throw new ConfigError(`${file} is readable by others (mode ${(mode & 0o777).toString(8)}): run \`chmod 600 ${file}\``)
    }
    return readFileSync(file, 'utf8')
  }
  const fromEnv = process.env.CIDSYNC_WALLET_KEY
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv
  throw new UsageError('no wallet key: give --wallet-key-file FILE, or set CIDSYNC_WALLET_KEY')
}

export function registerLogin (program: Command): void {
  program.command('login')
    .description('get an API key by signing the deal service\'s message with your wallet key, and save it (0600)')
    .option('--config <path>', 'config file')
    .option('--wallet-key-file <file>', 'file holding the wallet key (hex); else $CIDSYNC_WALLET_KEY')
    .option('--json', 'print JSON')
    .action(action(async (options: { config?: string, walletKeyFile?: string, json?: boolean }) => {
      const config = loadConfig({ configPath: options.config })
      if (config.service.mode === 'embedded') {
        process.stdout.write(`the embedded service signs in by itself (its account is in ${config.service.dir}); login is for service.mode = "remote"\n`)
        return
      }
      const { parseWalletKey } = await import('../../crypto/index.js')
      const walletKey = parseWalletKey(walletKeyText(options.walletKeyFile))
      const { connectService, Credential, credentialsDir } = await import('../../connect/index.js')
      const connection = await connectService(config)
      try {
        const { address, apiKey } = await connection.clients.deals.login(walletKey)
        const path = new Credential('api-key', credentialsDir(config)).save(apiKey)
        if (options.json === true) printJson({ address, saved: path })
        else process.stdout.write(`signed in as ${address}; API key saved to ${path}\n`)
      } finally {
        await connection.close()
      }
    }))
}
