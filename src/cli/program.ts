import { Command, Help } from 'commander'
import { StateDirOwnerError, UsageError } from '../errors.js'
import { cidsyncVersion } from '../version.js'
import { COMMAND_GROUPS, type CommandEntry } from './command-list.js'

/**
 * Commands that never write the state dir (status only reads daemon.json and asks the daemon;
 * generate writes only what it is told to), or (service) run as root on purpose.
 */
const WITHOUT_STATE = new Set(['init', 'cid', 'service', 'local-service', 'status', 'generate', 'help'])

function topLevel (command: Command): Command {
  let top = command
  while (top.parent?.parent != null) top = top.parent
  return top
}

/**
 * Before a command runs: a state dir that belongs to another user (the system service's) is
 * refused with the `sudo -u` to run instead, rather than read as nothing or written as root.
 */
async function checkStateDirOwner (_program: Command, command: Command): Promise<void> {
  if (WITHOUT_STATE.has(topLevel(command).name())) return
  // Loaded here, not with the program: `--version` and `--help` need no config (zod, TOML).
  const { loadConfig, stateDirOwnerProblem } = await import('../config/index.js')
  let stateDir: string
  try {
    stateDir = loadConfig({ configPath: (command.opts() as { config?: string }).config }).stateDir
  } catch {
    return // the command loads the config itself and reports what is wrong with it
  }
  const problem = stateDirOwnerProblem(stateDir)
  if (problem !== undefined) throw new StateDirOwnerError(problem)
}

/** Commands listed but not loaded (see {@link addUnloaded}). */
const unloaded = new WeakSet<Command>()

/**
 * `cidsync --config F status`, as `restic -r R snapshots` reads: the program's --config given to the
 * command, unless it has its own. One with no config to read says so rather than ignore it.
 */
function configBeforeCommand (program: Command, command: Command): void {
  const config = (program.opts() as { config?: string }).config
  // A command not loaded parses the line again once it is: its own options are known then.
  if (config === undefined || unloaded.has(command) || command.getOptionValue('config') !== undefined) return
  if (!command.options.some(option => option.long === '--config')) throw new UsageError(`--config: \`cidsync ${commandPath(command)}\` reads no config file; leave --config out`)
  command.setOptionValue('config', config)
}

/** The command's words after `cidsync`, as typed. */
function commandPath (command: Command): string {
  const words: string[] = []
  for (let c: Command | null = command; c?.parent != null; c = c.parent) words.unshift(c.name())
  return words.join(' ')
}

const HELP_EPILOGUE = `
Exit codes:
  0  ok
  1  failure (the message says what failed and what to do)
  2  usage or config error
  3  nothing found (no pointer, no such key or file)
  4  integrity failure (a CID or snapshot does not check out)

Output:
Errors go to stderr, each with a stable code in brackets, such as [ERR_CONFIG].
Logs are JSON lines on stderr, made readable when stderr is a terminal.
A listing piped into a reader that stops early (cidsync ls | head) ends quietly with 0.
A command that does work goes on with its output dropped, and exits as its work went.
Sizes are binary units: B, KiB, MiB.

Docs: README.md (start here), docs/operations.md (running it, troubleshooting),
docs/configuration.md (every config key), docs/errors.md (every error code).
\`cidsync help <command>\` shows one command; docs/reference/ has every command's help.`

/**
 * The top-level command a command line runs or asks the help of (`restore ...`, `help restore`),
 * by name; undefined for the program's own help, its version, or a name no command has. The
 * program's own options but `--config` (`-V`, `-h`) take no value, so the first other word names it.
 */
export function commandNamed (args: readonly string[]): string | undefined {
  // `--config F` is the program's one option with a value: F names no command.
  const words = args.filter((arg, i) => !arg.startsWith('-') && args[i - 1] !== '--config')
  const name = words[0] === 'help' ? words[1] : words[0]
  return COMMAND_GROUPS.some(([, entries]) => entries.some(entry => entry.name === name)) ? name : undefined
}

/**
 * A command not loaded: listed as its module would list it (its term and description), and, if
 * commander dispatches to it after all (a command line `commandNamed` read otherwise), the
 * program is made again with its module loaded and the same command line parsed by it.
 */
function addUnloaded (program: Command, entry: CommandEntry, argv: readonly string[], terms: WeakMap<Command, string>): void {
  const command = program.command(entry.name)
    .description(entry.description)
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments()
    .argument('[args...]')
    .action(async () => { await (await createProgram(argv, entry.name)).parseAsync(argv) })
  unloaded.add(command)
  terms.set(command, entry.term)
}

/**
 * The `cidsync` command line: one register function per command, each in its own file, loaded
 * only for the command `argv` runs (or `load` names); the others are listed from
 * `command-list.ts`, so `--help` reads the same and a run does not load every command's rooms.
 */
export async function createProgram (argv: readonly string[] = process.argv, load = commandNamed(argv.slice(2))): Promise<Command> {
  const register = COMMAND_GROUPS.flatMap(([, entries]) => entries).find(entry => entry.name === load)
  if (register?.loadsAll === true) return await createWholeProgram(argv)
  const loaded = new Map<CommandEntry, (program: Command) => void>(register === undefined ? [] : [[register, await register.load()]])
  return buildProgram(argv, loaded)
}

/**
 * The command line with every command loaded: what `cidsync generate` writes the reference
 * pages, man pages and completions from, so they say what each command's `--help` says.
 */
export async function createWholeProgram (argv: readonly string[] = ['node', 'cidsync']): Promise<Command> {
  const entries = COMMAND_GROUPS.flatMap(([, group]) => group)
  const loaded = new Map(await Promise.all(entries.map(async entry => [entry, await entry.load()] as const)))
  return buildProgram(argv, loaded)
}

function buildProgram (argv: readonly string[], loaded: ReadonlyMap<CommandEntry, (program: Command) => void>): Command {
  const terms = new WeakMap<Command, string>()
  const program = new Command('cidsync')
    .description('local-first index sync daemon for content-addressed storage')
    .version(cidsyncVersion())
    .showHelpAfterError('(run `cidsync help` for the commands)')
    .exitOverride()
    // Options belong to the command they follow (`local-service token --dir D` is token's --dir).
    .enablePositionalOptions()
    // An unloaded command's line is its module's; a loaded one's, and its subcommands', commander's own.
    .configureHelp({ subcommandTerm (this: Help, command: Command): string { return terms.get(command) ?? Help.prototype.subcommandTerm.call(this, command) } })
    .option('--config <path>', 'config file, for the command that follows (as each command\'s own --config)')
    .hook('preAction', configBeforeCommand)
    .hook('preAction', checkStateDirOwner)
  for (const [heading, entries] of COMMAND_GROUPS) {
    program.commandsGroup(heading)
    for (const entry of entries) {
      const register = loaded.get(entry)
      if (register !== undefined) register(program)
      else addUnloaded(program, entry, argv, terms)
    }
  }
  program.commandsGroup('Help:').helpCommand('help [command]', 'show help for a command')
  program.addHelpText('after', HELP_EPILOGUE)
  // Subcommands share the parent's exit override so their usage errors exit 2 too.
  const overrideAll = (command: Command): void => { command.exitOverride(); command.commands.forEach(overrideAll) }
  program.commands.forEach(overrideAll)
  return program
}
