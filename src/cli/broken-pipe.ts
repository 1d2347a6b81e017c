/**
 * Imported first by main.ts. A reader that stops early (`cidsync ls | head`, `find … | grep -m1`)
 * closes the pipe under stdout; Node then throws EPIPE from a write and prints a stack trace as an
 * unhandled 'error'. A listing's reader took what it wanted, so a listing ends there, quietly and
 * with 0, as ripgrep does. A command that does work (`restore --files --json | head -1`, `export
 * --json`, `snapshot --json`) is not cut short by it: ended with 0 there, it had written none of
 * its files (or half a CAR's temp) and said it succeeded. It goes on with its output dropped and
 * exits as its work went. The daemon keeps running: its output is its log, and losing a log
 * reader must not stop the syncing.
 */
const args = process.argv.slice(2)
const daemon = args[0] === 'daemon'

/** Commands whose output is all they do (and `status --watch`, which writes until stopped). */
const LISTINGS = new Set(['ls', 'find', 'where', 'dupes', 'log', 'cid', 'files', 'history', 'status', 'help'])
const endsQuietly = args[0] === undefined || LISTINGS.has(args[0]) ||
  args.some(arg => arg === '--help' || arg === '-h' || arg === '--version' || arg === '-V')

/** What is written from now on goes nowhere, with every write's callback called as if it went. */
function drop (stream: NodeJS.WriteStream): void {
  stream.write = ((_chunk: unknown, encoding?: unknown, callback?: unknown): boolean => {
    const done = typeof encoding === 'function' ? encoding : callback
    if (typeof done === 'function') process.nextTick(done as () => void)
    return true
  }) as typeof stream.write
}

function onStreamError (stream: NodeJS.WriteStream): (err: NodeJS.ErrnoException) => void {
  return (err) => {
    if (err.code !== 'EPIPE') throw err
    if (daemon) return
    if (endsQuietly) process.exit(0)
    drop(stream)
  }
}

process.stdout.on('error', onStreamError(process.stdout))
process.stderr.on('error', onStreamError(process.stderr))
