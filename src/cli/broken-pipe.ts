/**
 * Imported first by main.ts. A reader that stops early (`cidsync ls | head`, `find … | grep -m1`)
 * closes the pipe under stdout; Node then throws EPIPE from a write and prints a stack trace as an
 * unhandled 'error'. A command that only reads and prints (a listing, a search, help) ends there,
 * quietly and with 0, as ripgrep does: the reader took what it wanted. A command that does work
 * (`restore --files --json | head -1`, `snapshot`, `export`) goes on without its output and exits
 * by its result: ending it with 0 at its first lost line left a restore half done, reported as
 * success. The daemon keeps running too: its output is its log, and losing a log reader must not
 * stop the syncing.
 */
const args = process.argv.slice(2)
/** Commands that change nothing: what they print is all they do. */
const LISTINGS = new Set(['ls', 'find', 'where', 'dupes', 'log', 'history', 'names', 'files', 'cid', 'status', 'help'])
const command = args[0]
const onlyPrints = command === undefined || command.startsWith('-') || LISTINGS.has(command) || args.includes('--help') || args.includes('-h')

function onStreamError (err: NodeJS.ErrnoException): void {
  if (err.code !== 'EPIPE') throw err
  if (onlyPrints) process.exit(0)
}

process.stdout.on('error', onStreamError)
process.stderr.on('error', onStreamError)
