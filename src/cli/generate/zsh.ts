import { plainWord } from './bash.js'
import type { CompletionEntry, CompletionWord } from './completion-table.js'

/** A zsh `$'...'` string: anything may be in it. */
function dollarQuoted (text: string): string {
  return `$'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n')}'`
}

/** `word:description` lines, as `_describe` takes them (a colon in the word escaped; none are). */
function described (words: readonly CompletionWord[]): string {
  return dollarQuoted(words.map(w => `${plainWord(w.word)}:${w.description}`).join('\n'))
}

/**
 * The zsh completion script: a `#compdef` file for a directory in `$fpath` (as `_cidsync`), or
 * sourced after `compinit`. The same table as bash's, with each word's description.
 */
export function zshCompletion (table: readonly CompletionEntry[]): string {
  const commands = table.filter(e => e.commands.length > 0).map(e => `_cidsync_commands+=('${plainWord(e.at)}' ${described(e.commands)})`)
  const options = table.filter(e => e.options.length > 0).map(e => `_cidsync_options+=('${plainWord(e.at)}' ${described(e.options)})`)
  const valued = table.filter(e => e.options.some(o => o.value === 'required'))
    .map(e => `_cidsync_valued+=('${plainWord(e.at)}' ' ${e.options.filter(o => o.value === 'required').map(o => plainWord(o.word)).join(' ')} ')`)
  return `#compdef cidsync
# zsh completion for cidsync, made by \`cidsync generate --zsh-completion FILE\`.
# Save it as _cidsync in a directory of $fpath (before compinit runs), or source it after compinit.

typeset -gA _cidsync_commands _cidsync_options _cidsync_valued
${commands.join('\n')}
${options.join('\n')}
${valued.join('\n')}

_cidsync () {
  local at=cidsync word i skip=0
  local -a entries names
  for ((i = 2; i < CURRENT; i++)); do
    word=\${words[i]}
    if ((skip)); then skip=0; continue; fi
    case $word in
      --*=*) continue ;;
      -*) [[ \${_cidsync_valued[$at]} == *" $word "* ]] && skip=1; continue ;;
    esac
    entries=(\${(f)_cidsync_commands[$at]})
    names=(\${entries%%:*})
    (( \${names[(Ie)$word]} )) && at="$at $word"
  done
  if ((skip)); then _files; return; fi
  if [[ \${words[CURRENT]} == -* ]]; then
    entries=(\${(f)_cidsync_options[$at]})
    _describe -t options option entries
    return
  fi
  entries=(\${(f)_cidsync_commands[$at]})
  if (( \${#entries} )); then _describe -t commands command entries; else _files; fi
}

if [[ \${funcstack[1]} == _cidsync ]]; then
  _cidsync "$@"
else
  compdef _cidsync cidsync
fi
`
}
