import type { Command } from 'commander'
import { loadDaemonConfig } from '../config-wait.js'
import { action } from '../run.js'

/**
 * SIGTERM and SIGINT stop the daemon cleanly; a second one, or a stop that outlives
 * {@link DEFAULT_STOP_TIMEOUT_MS}, exits at once. Handlers go in before anything starts, so a
 * signal during start-up is a clean stop too, not the default kill.
 */
function stopSignal (): AbortSignal {
  const controller = new AbortController()
  const onSignal = (signal: NodeJS.Signals): void => {
    if (controller.signal.aborted) {
      process.stderr.write(`cidsync: ${signal} again, exiting without a clean stop\n`)
      process.exit(1)
    }
    setTimeout(() => {
      process.stderr.write(`cidsync: the clean stop took longer than ${DEFAULT_STOP_TIMEOUT_MS} ms, exiting\n`)
      process.exit(1)
    }, DEFAULT_STOP_TIMEOUT_MS).unref()
    controller.abort(signal)
  }
  process.on('SIGTERM', onSignal)
  process.on('SIGINT', onSignal)
  return controller.signal
}

/** How long a stop may take before the process gives up waiting and exits (systemd waits 90 s by default). */
export const DEFAULT_STOP_TIMEOUT_MS = 9_000

export function registerDaemon (program: Command): void {
  program.command('daemon')
    .description('run in the foreground: watch, index, serve status (the service unit\'s ExecStart)')
    .option('--config <path>', 'config file')
    .action(action(async (options: { config?: string }) => {
      const signal = stopSignal()
      const config = await loadDaemonConfig(options.config, signal)
      if (config === undefined) return
      const { createDaemon } = await import('../../daemon/index.js')
      const daemon = createDaemon(config)
      process.on('SIGHUP', () => { void daemon.reload() })
      let fatal: Error | undefined
      try {
        await daemon.start()
        // Until a signal, or until the daemon cannot go on (an index that cannot be written any more).
        if (!signal.aborted) {
          await Promise.race([
            new Promise(resolve => signal.addEventListener('abort', resolve, { once: true })),
            daemon.whenFatal().then(err => { fatal = err })
          ])
        }
      } finally {
        await daemon.stop()
      }
      if (fatal !== undefined) throw fatal
    }))
}
