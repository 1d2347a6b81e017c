import type { Command } from 'commander'
import { loadDaemonConfig } from '../config-wait.js'
import { action, onUnhandledFailure, reportError } from '../run.js'
import type { Daemon } from '../../daemon/index.js'
import { takeEarlySignals } from '../early-signals.js'

/**
 * SIGTERM and SIGINT stop the daemon cleanly; a second one, or a stop that outlives
 * {@link DEFAULT_STOP_TIMEOUT_MS}, exits at once. Handlers go in before anything starts, so a
 * signal during start-up is a clean stop too, not the default kill.
 */
function stopSignal (): { signal: AbortSignal, onSignal: (signal: NodeJS.Signals) => void } {
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
  return { signal: controller.signal, onSignal }
}

/**
 * SIGHUP reloads the config. One that comes before the daemon is started (its handler is in from
 * the first moment, see early-signals.ts) is remembered and applied once it is, never Node's
 * default exit.
 */
class ReloadSignal {
  private daemon: Daemon | undefined
  private wanted = false

  constructor () {
    process.on('SIGHUP', () => { this.received() })
  }

  received (): void {
    if (this.daemon === undefined) this.wanted = true
    else void this.daemon.reload()
  }

  /** The daemon is started: a SIGHUP that came meanwhile is applied now. */
  ready (daemon: Daemon): void {
    this.daemon = daemon
    if (!this.wanted) return
    this.wanted = false
    daemon.log.info('a SIGHUP came during start-up: reloading now')
    void daemon.reload()
  }
}

/**
 * A failure nothing handled: logged at fatal with where it came from, then a bounded attempt at a
 * clean stop (the pending batch committed, the lock released) and exit 1. A second one while
 * stopping exits at once.
 */
function failed (daemon: Daemon | undefined, err: unknown, origin: string): void {
  const uptimeSeconds = Math.round(process.uptime())
  if (daemon === undefined) reportError(err)
  else daemon.log.fatal({ err, origin, uptimeSeconds }, 'a failure nothing handled: stopping (a bug: please report it with this line)')
  if (stoppingAfterFailure) process.exit(1)
  stoppingAfterFailure = true
  process.exitCode = 1
  setTimeout(() => { process.exit(1) }, DEFAULT_STOP_TIMEOUT_MS).unref()
  void (daemon?.stop() ?? Promise.resolve()).catch(() => undefined).finally(() => process.exit(1))
}
let stoppingAfterFailure = false

/** Crash-testing hooks (CIDSYNC_FAILPOINT, as elsewhere): once started, a promise rejected with no owner, or a throw from a timer. */
function testHook (): void {
  const point = process.env.CIDSYNC_FAILPOINT
  if (point === 'daemon:unhandled-rejection') setTimeout(() => { void Promise.reject(new Error(`failpoint ${point}`)) }, 50)
  if (point === 'daemon:uncaught-exception') setTimeout(() => { throw new Error(`failpoint ${point}`) }, 50)
}

/** How long a stop may take before the process gives up waiting and exits (systemd waits 90 s by default). */
export const DEFAULT_STOP_TIMEOUT_MS = 9_000

const DAEMON_HELP = `
What it does:
- Scans each folder at start, hashing only files whose size or mtime changed.
- Watches the folders, one watch per directory, and indexes each change once it settles.
- Stores the content of folders with store = true, sealed with the snapshot key.
- Publishes the index on [snapshot] schedule, and after changes once the folders are quiet.
- Serves status, the dashboard and /metrics on [status] listen (127.0.0.1:7345 by default).

Stopping and reloading:
Ctrl-C or SIGTERM stops it within seconds; it commits what it gathered first.
SIGHUP (systemctl reload cidsync) applies most config changes without a restart.
One daemon runs per state dir: a second one exits 1, naming the first.
Two daemons cannot share a status port either: the second exits 1, naming the one that holds it.
docs/how-it-works.md says what it does in full; docs/operations.md runs it as a service.`

export function registerDaemon (program: Command): void {
  program.command('daemon')
    .description('run in the foreground: watch, index, serve status (the service unit\'s ExecStart)')
    .addHelpText('after', DAEMON_HELP)
    .option('--config <path>', 'config file')
    .action(action(async (options: { config?: string }) => {
      let daemon: Daemon | undefined
      onUnhandledFailure((err, origin) => { failed(daemon, err, origin) })
      const { signal, onSignal } = stopSignal()
      const reload = new ReloadSignal()
      for (const early of takeEarlySignals()) {
        if (early === 'SIGHUP') reload.received()
        else onSignal(early)
      }
      const config = await loadDaemonConfig(options.config, signal)
      if (config === undefined) return
      const { createDaemon } = await import('../../daemon/index.js')
      daemon = createDaemon(config)
      let fatal: Error | undefined
      try {
        await daemon.start()
        reload.ready(daemon)
        testHook()
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
