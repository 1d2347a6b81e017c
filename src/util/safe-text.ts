/**
 * Text from outside (file and directory names, a device's hostname, a service's error message)
 * made safe to print on a terminal. A name holding ESC or BEL could otherwise set the window
 * title, clear the screen or move the cursor to forge a line; a bidi override could make
 * `evil\u202Etxt.exe` read as another name. Each such character is shown visibly instead, as an
 * escape a reader recognises (`\x1b`, `\u202e`); a backslash itself is left alone, so ordinary
 * Windows-like names read as they are. JSON output never goes through here: it stays exact.
 */

// C0 controls, DEL, C1 controls, and the bidi embeddings, overrides and isolates (plus the marks
// that reorder text the same way), and the line and paragraph separators some terminals honour.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu
// The same, sparing the newline: for whole messages whose own line breaks are ours.
const UNSAFE_BUT_NEWLINE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu

// The same set, not global: a test of it keeps no state between calls.
const ANY_UNSAFE = new RegExp(UNSAFE.source, 'u')

/** Whether `text` holds a character {@link safeText} would show as an escape. */
export function hasUnsafe (text: string): boolean {
  return ANY_UNSAFE.test(text)
}

function visible (char: string): string {
  const code = char.codePointAt(0) ?? 0
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`
}

/** One value (a name, a hostname, a cell) with every control and bidi character shown visibly. */
export function safeText (text: string): string {
  return text.replace(UNSAFE, visible)
}

/** A message of several lines: its newlines kept, every other control and bidi character shown visibly. */
export function safeLines (text: string): string {
  return text.replace(UNSAFE_BUT_NEWLINE, visible)
}

/** One line from outside, made safe as {@link safeText} does and cut to `maxChars` (an ellipsis marks the cut). */
export function boundedLine (text: string, maxChars: number): string {
  const cut = text.length > maxChars ? `${text.slice(0, maxChars)}…` : text
  return safeText(cut)
}
