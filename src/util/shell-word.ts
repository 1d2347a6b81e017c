import { hasUnsafe, safeText } from './safe-text.js'

/**
 * A path or argument as one shell word to paste: bare when plain, else single-quoted. One holding
 * a character a terminal would act on (a name from another device may hold a newline, ESC, a C1
 * control or a bidi override) goes in bash's `$'...'`, each such character escaped: printed, the
 * line stays as written, and pasted, the word names the same file.
 */
export function shellWord (text: string): string {
  if (/^[\w@%+=:,./-]+$/.test(text)) return text
  if (!hasUnsafe(text)) return `'${text.replace(/'/g, `'\\''`)}'`
  return `$'${[...text].map(escaped).join('')}'`
}

/** One character inside `$'...'`: a byte below 0x80 as `\xHH`, one above as `\uHHHH` (bash writes its UTF-8). */
function escaped (char: string): string {
  if (char === '\\' || char === "'") return `\\${char}`
  if (char === '\n') return '\\n'
  if (safeText(char) === char) return char
  const code = char.codePointAt(0) ?? 0
  return code < 0x80 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`
}
