/**
 * A path or argument as one shell word to paste: bare when plain, else single-quoted; one holding
 * a control character (a name from another device may hold a newline or ESC) in bash's `$'...'`
 * with each escaped, so the line that shows it stays one line a terminal shows as written.
 */
export function shellWord (text: string): string {
  if (/^[\w@%+=:,./-]+$/.test(text)) return text
  if (!/[\u0000-\u001f\u007f]/.test(text)) return `'${text.replace(/'/g, `'\\''`)}'`
  return `$'${text.replace(/[\\']/g, c => `\\${c}`).replace(/[\u0000-\u001f\u007f]/g, c => c === '\n' ? '\\n' : `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`)}'`
}
