import { Command } from 'commander'
import { VERSION } from '../version.js'
import { registerCid } from './commands/cid.js'
import { registerDaemon } from './commands/daemon.js'
import { registerInit } from './commands/init.js'
import { registerLs } from './commands/ls.js'
import { registerStatus } from './commands/status.js'

/** The `cidsync` command line: one register function per command, each in its own file. */
export function createProgram (): Command {
  const program = new Command('cidsync')
    .description('local-first index sync daemon for content-addressed storage')
    .version(VERSION)
    .showHelpAfterError('(run `cidsync help` for the commands)')
    .exitOverride()
  for (const register of [registerInit, registerDaemon, registerStatus, registerLs, registerCid]) register(program)
  // Subcommands share the parent's exit override so their usage errors exit 2 too.
  for (const command of program.commands) command.exitOverride()
  return program
}
