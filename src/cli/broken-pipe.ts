/**
 * Imported first by main.ts. A reader that stops early (`cidsync ls | head`, `find … | grep -m1`)
 * closes the pipe under stdout; Node then throws EPIPE from a write and prints a stack trace as an
 * unhandled 'error'. The reader took what it wanted, so a command ends there, quietly and with 0,
 * as ripgrep does. The daemon keeps running: its output is its log, and losing a log reader must
 * not stop the syncing.
 */
const daemon = process.argv[2] === 'daemon'

function onStreamError (err: NodeJS.ErrnoException): void {
  if (err.code !== 'EPIPE') throw err
  if (!daemon) process.exit(0)
}

process.stdout.on('error', onStreamError)
process.stderr.on('error', onStreamError)
