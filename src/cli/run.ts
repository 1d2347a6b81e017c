import { CommanderError } from 'commander'
import { CidsyncError, ExitCode, exitCodeOf, RemoteNetworkError } from '../errors.js'
import { safeLines } from './safe-text.js'

/** Writes an error the way every command does: one line (or block) on stderr, prefixed. */
export function reportError (err: unknown): void {
  const message = err instanceof Error ? err.message + networkAdvice(err) : String(err)
  const code = err instanceof CidsyncError ? ` [${err.code}]` : ''
  // Messages name files, hosts and what a service answered: never raw terminal escapes.
  process.stderr.write(`cidsync: ${safeLines(message)}${code}\n`)
  if (!(err instanceof CidsyncError) && err instanceof Error && process.env.CIDSYNC_DEBUG !== undefined) {
    process.stderr.write(`${err.stack ?? ''}\n`)
  }
}

/**
 * A service that did not answer at all ("no answer (ECONNREFUSED)") said only that: what to do,
 * for a command that stops there (the daemon's status lines say it their own way).
 */
function networkAdvice (err: Error): string {
  if (!(err instanceof RemoteNetworkError) || !/: no answer \([A-Z_]+\)$/.test(err.message)) return ''
  return ': nothing answers at that address: check that the service runs there and that this machine reaches it (the URLs are in the config\'s [service], or its [[mirrors]] table), then run this again'
}

/** Wraps a command's action: its errors become a message and the exit code their class names. */
export function action<A extends unknown[]> (fn: (...args: A) => Promise<void> | void): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      await fn(...args)
    } catch (err) {
      reportError(err)
      process.exitCode = exitCodeOf(err)
    }
  }
}

/** commander's own failures (unknown option, missing argument) are usage errors: exit 2. */
export function exitCodeOfCommander (err: CommanderError): number {
  if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return ExitCode.ok
  return ExitCode.usage
}

/**
 * Every promise has an owner, and this is the last one: a rejection nobody handled, or an
 * exception thrown where nothing catches it, goes to `handle` with where it came from, instead of
 * Node's default (a bare stack on stderr, outside the log).
 */
export function onUnhandledFailure (handle: (err: unknown, origin: 'unhandledRejection' | 'uncaughtException') => void): void {
  process.on('unhandledRejection', (reason) => { handle(reason, 'unhandledRejection') })
  process.on('uncaughtException', (err) => { handle(err, 'uncaughtException') })
}
