import { Command } from 'commander'
import { VERSION } from '../version.js'
import { registerCid } from './commands/cid.js'
import { registerDaemon } from './commands/daemon.js'
import { registerInit } from './commands/init.js'
import { registerLs } from './commands/ls.js'
import { registerStatus } from './commands/status.js'
import { registerLogin } from './commands/login.js'
import { registerFiles } from './commands/files.js'
import { registerNames } from './commands/names.js'
import { registerDeal } from './commands/deal.js'
import { registerPointer } from './commands/pointer.js'
import { registerLocalService } from './commands/local-service.js'
import { registerKey } from './commands/key.js'
import { registerSnapshot } from './commands/snapshot.js'
import { registerRestore } from './commands/restore.js'
import { registerService } from './commands/service.js'

/** The `cidsync` command line: one register function per command, each in its own file. */
export function createProgram (): Command {
  const program = new Command('cidsync')
    .description('local-first index sync daemon for content-addressed storage')
    .version(VERSION)
    .showHelpAfterError('(run `cidsync help` for the commands)')
    .exitOverride()
    // Options belong to the command they follow (`local-service token --dir D` is token's --dir).
    .enablePositionalOptions()
  for (const register of [registerInit, registerDaemon, registerStatus, registerLs, registerCid, registerLogin, registerFiles, registerNames, registerDeal, registerPointer, registerLocalService, registerKey, registerSnapshot, registerRestore, registerService]) register(program)
  // Subcommands share the parent's exit override so their usage errors exit 2 too.
  const overrideAll = (command: Command): void => { command.exitOverride(); command.commands.forEach(overrideAll) }
  program.commands.forEach(overrideAll)
  return program
}
