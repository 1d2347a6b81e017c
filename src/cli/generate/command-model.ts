import type { EventEmitter } from 'node:events'
import type { Command, Help, Option } from 'commander'

/** How an option takes its value: `--json` none, `--at <time>` required, `--files [prefix]` optional. */
export type OptionValue = 'none' | 'required' | 'optional'

export interface OptionModel {
  /** As `--help` shows it: `-h, --help`, `--at <time>`. */
  readonly flags: string
  readonly long?: string
  readonly short?: string
  readonly value: OptionValue
  /** Its description with what commander adds (default, choices), as `--help` shows it. */
  readonly description: string
}

export interface ArgumentModel {
  /** As the usage line shows it: `<path...>`, `[prefix]`. */
  readonly term: string
  readonly name: string
  readonly description: string
}

/**
 * One command as `--help` describes it, read from the program itself: the reference pages, the
 * man pages and the completions are all written from this, so none of them can say otherwise.
 */
export interface CommandModel {
  /** The words that run it: `['cidsync', 'key', 'export']`. */
  readonly path: readonly string[]
  readonly name: string
  /** The usage line without `Usage: `: `cidsync restore [options]`. */
  readonly usage: string
  readonly description: string
  /** Its heading in the parent's command list (`Set up:`), or '' where there are none. */
  readonly group: string
  readonly arguments: readonly ArgumentModel[]
  readonly options: readonly OptionModel[]
  /** The text `addHelpText('after', ...)` gives it, without a trailing newline; '' when none. */
  readonly details: string
  /** Its subcommands, the implicit `help` command left out. */
  readonly commands: readonly CommandModel[]
  /** Whether it has a `help [command]` subcommand (completed, not documented). */
  readonly hasHelpCommand: boolean
}

function optionModel (option: Option, help: Help): OptionModel {
  return {
    flags: help.optionTerm(option),
    long: option.long,
    short: option.short,
    value: option.required ? 'required' : option.optional ? 'optional' : 'none',
    description: help.optionDescription(option)
  }
}

/**
 * What `addHelpText('after', ...)` wrote for this command alone: commander keeps that text only
 * as a listener, so the listener is asked to write it here.
 */
function detailsOf (command: Command): string {
  let text = ''
  // A Command is an EventEmitter; its types do not say so.
  ;(command as unknown as EventEmitter).emit('afterHelp', { error: false, command, write: (chunk: string) => { text += chunk } })
  return text.replace(/\s+$/, '').replace(/^\n+/, '')
}

/** commander's `help [command]`: listed by `--help`, yet not among the parent's own commands. */
function helpCommandOf (parent: Command): (command: Command) => boolean {
  return command => !parent.commands.includes(command)
}

/** The model of `command` and everything under it. */
export function commandModel (command: Command, path: readonly string[] = [command.name()]): CommandModel {
  const help = command.createHelp()
  const visible = help.visibleCommands(command)
  const isHelpCommand = helpCommandOf(command)
  return {
    path,
    name: command.name(),
    usage: help.commandUsage(command),
    description: help.commandDescription(command),
    group: command.helpGroup(),
    arguments: command.registeredArguments.map(argument => ({
      term: help.argumentTerm(argument) === argument.name() ? humanTerm(argument.name(), argument.required, argument.variadic) : help.argumentTerm(argument),
      name: argument.name(),
      description: help.argumentDescription(argument)
    })),
    options: help.visibleOptions(command).map(option => optionModel(option, help)),
    details: detailsOf(command),
    commands: visible.filter(sub => !isHelpCommand(sub)).map(sub => commandModel(sub, [...path, sub.name()])),
    hasHelpCommand: visible.some(isHelpCommand)
  }
}

function humanTerm (name: string, required: boolean, variadic: boolean): string {
  const inner = `${name}${variadic ? '...' : ''}`
  return required ? `<${inner}>` : `[${inner}]`
}

/** Every command under `root` (itself first), depth first, in `--help`'s order. */
export function everyCommand (root: CommandModel): CommandModel[] {
  return [root, ...root.commands.flatMap(everyCommand)]
}
