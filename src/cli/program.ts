import { Command } from 'commander'
import { loadConfig, stateDirOwnerProblem } from '../config/index.js'
import { StateDirOwnerError } from '../errors.js'
import { VERSION } from '../version.js'
import { registerCid } from './commands/cid.js'
import { registerDaemon } from './commands/daemon.js'
import { registerInit } from './commands/init.js'
import { registerLs } from './commands/ls.js'
import { registerGet } from './commands/get.js'
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
import { registerRescan } from './commands/rescan.js'
import { registerReconcile } from './commands/reconcile.js'
import { registerHistory } from './commands/history.js'
import { registerVerify } from './commands/verify.js'
import { registerDashboard } from './commands/dashboard.js'
import { registerFind } from './commands/find.js'
import { registerWhere } from './commands/where.js'
import { registerDupes } from './commands/dupes.js'
import { registerLog } from './commands/log.js'
import { registerExport } from './commands/export.js'
import { registerImport } from './commands/import.js'

/**
 * Commands that never write the state dir (status only reads daemon.json and asks the daemon), or
 * (service) run as root on purpose.
 */
const WITHOUT_STATE = new Set(['init', 'cid', 'service', 'local-service', 'status', 'help'])

function topLevel (command: Command): Command {
  let top = command
  while (top.parent?.parent != null) top = top.parent
  return top
}

/**
 * Before a command runs: a state dir that belongs to another user (the system service's) is
 * refused with the `sudo -u` to run instead, rather than read as nothing or written as root.
 */
function checkStateDirOwner (_program: Command, command: Command): void {
  if (WITHOUT_STATE.has(topLevel(command).name())) return
  let stateDir: string
  try {
    stateDir = loadConfig({ configPath: (command.opts() as { config?: string }).config }).stateDir
  } catch {
    return // the command loads the config itself and reports what is wrong with it
  }
  const problem = stateDirOwnerProblem(stateDir)
  if (problem !== undefined) throw new StateDirOwnerError(problem)
}

/** The commands in `--help`: by what a user does, in the order they first need them. */
const COMMAND_GROUPS: ReadonlyArray<readonly [string, ReadonlyArray<(program: Command) => void>]> = [
  ['Set up:', [registerInit, registerLogin, registerKey, registerService, registerDaemon]],
  ['Day to day:', [registerStatus, registerDashboard, registerLs, registerHistory, registerSnapshot, registerRescan, registerReconcile]],
  ['Find:', [registerFind, registerWhere, registerDupes, registerLog]],
  ['Restore and check:', [registerGet, registerRestore, registerVerify, registerPointer]],
  ['Move out and in:', [registerExport, registerImport]],
  ['The service by hand:', [registerFiles, registerDeal, registerNames, registerCid, registerLocalService]]
]

const HELP_EPILOGUE = `
Exit codes:
  0  ok
  1  failure (the message says what failed and what to do)
  2  usage or config error
  3  nothing found (no pointer, no such key or file)
  4  integrity failure (a CID or snapshot does not check out)

Docs: README.md (start here), docs/operations.md (running it, troubleshooting),
docs/configuration.md (every config key). \`cidsync help <command>\` shows one command.`

/** The `cidsync` command line: one register function per command, each in its own file. */
export function createProgram (): Command {
  const program = new Command('cidsync')
    .description('local-first index sync daemon for content-addressed storage')
    .version(VERSION)
    .showHelpAfterError('(run `cidsync help` for the commands)')
    .exitOverride()
    // Options belong to the command they follow (`local-service token --dir D` is token's --dir).
    .enablePositionalOptions()
    .hook('preAction', checkStateDirOwner)
  for (const [heading, registers] of COMMAND_GROUPS) {
    program.commandsGroup(heading)
    for (const register of registers) register(program)
  }
  program.commandsGroup('Help:').helpCommand('help [command]', 'show help for a command')
  program.addHelpText('after', HELP_EPILOGUE)
  // Subcommands share the parent's exit override so their usage errors exit 2 too.
  const overrideAll = (command: Command): void => { command.exitOverride(); command.commands.forEach(overrideAll) }
  program.commands.forEach(overrideAll)
  return program
}
