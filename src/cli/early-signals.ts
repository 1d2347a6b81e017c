/**
 * Imported first, before the rest of the CLI loads (by the launcher, launch.ts, and again by
 * main.ts): for `cidsync daemon`, SIGHUP, SIGTERM and SIGINT are held from the first moment, so
 * one that comes while the CLI is still loading is not Node's default (a silent exit, 129 for
 * SIGHUP, that systemd takes for a clean one). The daemon command takes them over with
 * {@link takeEarlySignals} and acts on them. Other commands keep Node's defaults.
 *
 * The launcher and the CLI's bundle each hold a copy of this module: what is held lives on the
 * process, under one key, so the first copy holds and either copy hands over.
 */
const HELD: readonly NodeJS.Signals[] = ['SIGHUP', 'SIGTERM', 'SIGINT']
const KEY = Symbol.for('cidsync.early-signals')

interface Held { readonly signals: NodeJS.Signals[], readonly hold: (signal: NodeJS.Signals) => void }
const processWide = globalThis as { [KEY]?: Held }

if (process.argv[2] === 'daemon' && processWide[KEY] === undefined) {
  const signals: NodeJS.Signals[] = []
  const held: Held = { signals, hold: (signal) => { signals.push(signal) } }
  processWide[KEY] = held
  for (const signal of HELD) process.on(signal, held.hold)
}

/** The signals held so far, in order; holding stops (call it once the command's own handlers are in). */
export function takeEarlySignals (): NodeJS.Signals[] {
  const held = processWide[KEY]
  if (held === undefined) return []
  for (const signal of HELD) process.off(signal, held.hold)
  return held.signals.splice(0)
}
