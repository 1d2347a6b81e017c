import { plainWord } from './bash.js'
import type { CompletionEntry } from './completion-table.js'

/** A fish single-quoted string: only `\` and `'` are special in it. */
function quoted (text: string): string {
  return `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`
}

function optionFlag (word: string): string {
  return word.startsWith('--') ? `-l ${word.slice(2)}` : `-s ${word.slice(1)}`
}

/**
 * The fish completion script (for ~/.config/fish/completions/cidsync.fish): a function that finds
 * the command the line is in, and one `complete` line per command word and option there.
 */
export function fishCompletion (table: readonly CompletionEntry[]): string {
  const commandPaths = table.flatMap(e => e.commands.map(c => `${e.at} ${c.word}`))
  const valued = table.flatMap(e => e.options.filter(o => o.value === 'required').map(o => `${e.at} ${o.word}`))
  const lines: string[] = []
  for (const entry of table) {
    const when = `-n ${quoted(`__cidsync_at ${quoted(plainWord(entry.at))}`)}`
    if (entry.commands.length > 0) lines.push(`complete -c cidsync ${when} -f`)
    for (const command of entry.commands) lines.push(`complete -c cidsync ${when} -a ${plainWord(command.word)} -d ${quoted(command.description)}`)
    for (const option of entry.options) {
      lines.push(`complete -c cidsync ${when} ${optionFlag(plainWord(option.word))}${option.value === 'required' ? ' -r' : ''} -d ${quoted(option.description)}`)
    }
  }
  return `# fish completion for cidsync, made by \`cidsync generate --fish-completion FILE\`.
# Put it in ~/.config/fish/completions/cidsync.fish.

set -g __cidsync_command_paths ${commandPaths.map(p => quoted(plainWord(p))).join(' ')}
set -g __cidsync_valued ${valued.map(p => quoted(plainWord(p))).join(' ')}

# The command the line is in so far: its words, options and their values left out.
function __cidsync_path
    set -l at cidsync
    set -l skip 0
    set -l words (commandline -opc)
    set -e words[1]
    for word in $words
        if test $skip = 1
            set skip 0
            continue
        end
        switch $word
            case '--*=*'
                continue
            case '-*'
                contains -- "$at $word" $__cidsync_valued; and set skip 1
                continue
        end
        contains -- "$at $word" $__cidsync_command_paths; and set at "$at $word"
    end
    echo $at
end

function __cidsync_at
    test (__cidsync_path) = "$argv[1]"
end

complete -c cidsync -e
${lines.join('\n')}
`
}
