import type { CommandModel, OptionValue } from './command-model.js'
import { everyCommand } from './command-model.js'

export interface CompletionWord {
  readonly word: string
  /** A short description, one line: shells show it beside the word. */
  readonly description: string
}

export interface CompletionOption extends CompletionWord {
  readonly value: OptionValue
}

/**
 * What a shell completes after the words of `at` (`cidsync key`): its subcommands, its options,
 * and which options take the next word as their value (that word is then no command).
 */
export interface CompletionEntry {
  readonly at: string
  readonly commands: readonly CompletionWord[]
  readonly options: readonly CompletionOption[]
}

/** A description cut to its first clause (one long enough to say something) and one line, as a completion menu shows it. */
export function shortDescription (description: string): string {
  const flat = description.replace(/\s+/g, ' ').trim()
  let line = flat
  for (const end of flat.matchAll(/(?<=\S)(?:: |; |\. )/g)) {
    if (end.index >= 24) { line = flat.slice(0, end.index); break }
  }
  return line.length <= 80 ? line : `${line.slice(0, line.lastIndexOf(' ', 77))}...`
}

function optionWords (command: CommandModel): CompletionOption[] {
  return command.options.flatMap(option => [option.long, option.short]
    .filter((flag): flag is string => flag !== undefined)
    .map(word => ({ word, description: shortDescription(option.description), value: option.value })))
}

/**
 * Every place a completion can stand, from the model: one entry per command, and one for each
 * `help` subcommand (it takes a command's name).
 */
export function completionTable (root: CommandModel): CompletionEntry[] {
  return everyCommand(root).flatMap(command => {
    const at = command.path.join(' ')
    const commands = command.commands.map(sub => ({ word: sub.name, description: shortDescription(sub.description) }))
    const own: CompletionEntry = {
      at,
      commands: command.hasHelpCommand ? [...commands, { word: 'help', description: 'show help for a command' }] : commands,
      options: optionWords(command)
    }
    return command.hasHelpCommand ? [own, { at: `${at} help`, commands, options: [] }] : [own]
  })
}
