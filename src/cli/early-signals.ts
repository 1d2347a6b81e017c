/**
 * Imported first by main.ts, before the rest of the CLI loads: for `cidsync daemon`, SIGHUP,
 * SIGTERM and SIGINT are held from the first moment, so one that comes while the CLI is still
 * loading is not Node's default (a silent exit, 129 for SIGHUP, that systemd takes for a clean
 * one). The daemon command takes them over with {@link takeEarlySignals} and acts on them.
 * Other commands keep Node's defaults.
 */
const HELD: readonly NodeJS.Signals[] = ['SIGHUP', 'SIGTERM', 'SIGINT']
const early: NodeJS.Signals[] = []
const hold = (signal: NodeJS.Signals): void => { early.push(signal) }

if (process.argv[2] === 'daemon') for (const signal of HELD) process.on(signal, hold)

/** The signals held so far, in order; holding stops (call it once the command's own handlers are in). */
export function takeEarlySignals (): NodeJS.Signals[] {
  for (const signal of HELD) process.off(signal, hold)
  return early.splice(0)
}
