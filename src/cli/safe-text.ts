/**
 * Text from disk or another device, made safe for a terminal: C0 controls, DEL, C1 controls and
 * the bidirectional overrides and isolates (which reorder what follows them) become visible
 * `\xHH` / `\u{HHHH}` escapes, so a name can neither move the cursor, recolour the screen nor
 * disguise its extension. A backslash stays as it is.
 */
export function safeText (text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, (c) => {
    const code = c.charCodeAt(0)
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u{${code.toString(16)}}`
  })
}
