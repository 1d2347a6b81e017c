// The daemon's signals are held first (early-signals.ts); the rest of the CLI is loaded only then,
// dynamically: a static import would load the whole command tree before this module ran.
import './early-signals.js'
import './broken-pipe.js'
import { printsOnly } from './brief.js'

/**
 * The command named in `process.argv`, run to its end; its exit code is left in
 * `process.exitCode`. The launcher (launch.ts) waits on it to keep the code cache.
 */
export const done: Promise<void> = main()

async function main (): Promise<void> {
  const [{ CommanderError }, { createProgram }, { exitCodeOf }, { exitCodeOfCommander, reportError }, { checkOpenFilesLimit }] =
    await Promise.all([import('commander'), import('./program.js'), import('../errors.js'), import('./run.js'), import('../util/open-files-limit.js')])
  try {
    // Before a command opens anything: under a limit too low it fails midway, and misnamed. The
    // version and the help open nothing, and say how to use it whatever the limit.
    if (!printsOnly(process.argv)) checkOpenFilesLimit()
    // Only the module of the command being run is loaded (program.ts lists the others).
    await (await createProgram(process.argv)).parseAsync(process.argv)
  } catch (err) {
    if (err instanceof CommanderError) {
      process.exitCode = exitCodeOfCommander(err)
    } else {
      reportError(err)
      process.exitCode = exitCodeOf(err)
    }
  }
}
