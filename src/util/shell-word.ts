import { hasUnsafe, safeText } from './safe-text.js'

/**
 * A path or argument as one shell word to paste: bare when plain, else single-quoted. One holding
 * a character a terminal would act on (a name from another device may hold a newline, ESC, a C1
 * control or a bidi override) goes in `$'...'`, each such character escaped: printed, the line
 * stays as written, and pasted, the word names the same file. A leading `=` or `~` is quoted:
 * zsh expands `=cmd` to the command's path, and both shells expand `~`.
 */
export function shellWord (text: string): string {
  if (/^[\w@%+=:,./-]+$/.test(text) && !text.startsWith('=')) return text
  if (!hasUnsafe(text)) return `'${text.replace(/'/g, `'\\''`)}'`
  return `$'${[...text].map(escaped).join('')}'`
}

/**
 * One character inside `$'...'`: as itself when safe, else its UTF-8 bytes as `\xHH`. Bytes read
 * the same in bash and zsh under any locale; `\uHHHH` does not under `LC_ALL=C`.
 */
function escaped (char: string): string {
  if (char === '\\' || char === "'") return `\\${char}`
  if (char === '\n') return '\\n'
  if (safeText(char) === char) return char
  return [...Buffer.from(char, 'utf8')].map(byte => `\\x${byte.toString(16).padStart(2, '0')}`).join('')
}

/** The options of a run that a command it suggests repeats. */
export interface AgainOptions { readonly to?: string, readonly config?: string, readonly from?: string }

/**
 * `options` as a suggested command repeats them, shell-quoted: where files go, which config, which
 * home. Without them, a hint pasted as shown writes into the configured folder, which the daemon
 * then indexes and publishes again, or reads another config.
 */
export function againOptions (options: AgainOptions): string {
  return [['--to', options.to], ['--config', options.config], ['--from', options.from]]
    .filter((pair): pair is [string, string] => pair[1] !== undefined)
    .map(([flag, value]) => ` ${flag} ${shellWord(value)}`).join('')
}
