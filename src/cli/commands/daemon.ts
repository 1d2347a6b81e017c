import type { Command } from 'commander'
import { loadConfig } from '../../config/index.js'
import { createDaemon, DEFAULT_STOP_TIMEOUT_MS } from '../../daemon/index.js'
import { action, reportError } from '../run.js'

export function registerDaemon (program: Command): void {
  program.command('daemon')
    .description('run in the foreground: watch, index, serve status (the service unit\'s ExecStart)')
    .option('--config <path>', 'config file')
    .action(action(async (options: { config?: string }) => {
      const config = loadConfig({ configPath: options.config })
      const daemon = createDaemon(config)
      await daemon.start()
      await new Promise<void>((resolve) => {
        let signals = 0
        const onSignal = (signal: NodeJS.Signals): void => {
          signals++
          if (signals > 1) {
            process.stderr.write(`cidsync: ${signal} again, exiting without a clean stop\n`)
            process.exit(1)
          }
          // A stop that hangs must not outlive the service manager's patience.
          setTimeout(() => {
            process.stderr.write(`cidsync: the clean stop took longer than ${DEFAULT_STOP_TIMEOUT_MS} ms, exiting\n`)
            process.exit(1)
          }, DEFAULT_STOP_TIMEOUT_MS).unref()
          daemon.stop().then(resolve, (err: unknown) => { reportError(err); process.exitCode = 1; resolve() })
        }
        process.on('SIGTERM', onSignal)
        process.on('SIGINT', onSignal)
      })
    }))
}
