import { InternalError } from '../../errors.js'
import type { CompletionEntry } from './completion-table.js'

/** Command and option names go into the script unquoted in places: only these characters. */
const PLAIN = /^[A-Za-z0-9][A-Za-z0-9 -]*$|^-{1,2}[A-Za-z0-9][A-Za-z0-9-]*$/

export function plainWord (word: string): string {
  if (!PLAIN.test(word)) throw new InternalError(`a command or option name a completion script cannot hold as it is: ${JSON.stringify(word)}`)
  return word
}

function caseArm (at: string, words: readonly string[]): string {
  return `    '${plainWord(at)}') echo '${words.map(plainWord).join(' ')}' ;;`
}

/**
 * The bash completion script: the command words a position can take, each command's options,
 * and which options take a value (the next word is skipped, and completes as a file name).
 */
export function bashCompletion (table: readonly CompletionEntry[]): string {
  const withCommands = table.filter(entry => entry.commands.length > 0)
  const withOptions = table.filter(entry => entry.options.length > 0)
  const valued = table.flatMap(entry => entry.options.filter(o => o.value === 'required').map(o => `${entry.at} ${o.word}`))
  return `# bash completion for cidsync, made by \`cidsync generate --bash-completion FILE\`.
# Source it, or put it where bash-completion looks (/etc/bash_completion.d/ or
# ~/.local/share/bash-completion/completions/cidsync).

_cidsync_commands () {
  case $1 in
${withCommands.map(entry => caseArm(entry.at, entry.commands.map(c => c.word))).join('\n')}
  esac
}

_cidsync_options () {
  case $1 in
${withOptions.map(entry => caseArm(entry.at, entry.options.map(o => o.word))).join('\n')}
  esac
}

_cidsync_takes_value () {
  case "$1 $2" in
${valued.map(line => `    '${plainWord(line)}') return 0 ;;`).join('\n')}
  esac
  return 1
}

_cidsync () {
  local cur=\${COMP_WORDS[COMP_CWORD]} at=cidsync word i skip=0
  COMPREPLY=()
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=\${COMP_WORDS[i]}
    if ((skip)); then skip=0; continue; fi
    case $word in
      --*=*) continue ;;
      -*) _cidsync_takes_value "$at" "$word" && skip=1; continue ;;
    esac
    if [[ " $(_cidsync_commands "$at") " == *" $word "* ]]; then at="$at $word"; fi
  done
  # An option's value, or a command that takes no more commands: bash completes file names.
  ((skip)) && return 0
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$(_cidsync_options "$at")" -- "$cur"))
  else
    COMPREPLY=($(compgen -W "$(_cidsync_commands "$at")" -- "$cur"))
  fi
  return 0
}

complete -o default -F _cidsync cidsync
`
}
