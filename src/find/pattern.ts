/**
 * What `find` matches: a substring (the default; quotes, `%`, `_` and backslashes are plain
 * characters), or a glob when the pattern holds `*` or `?` (unless asked to take it literally):
 * `*` any run of characters, `?` one; any other character, `[` included, stands for itself. A
 * glob matches the whole `folder/path` or its end after a `/` (`*.pdf`, `report-??.txt`). Both
 * ignore ASCII case.
 */
export type Pattern =
  | { readonly kind: 'substring', readonly text: string, readonly ftsPhrase: string | undefined }
  | { readonly kind: 'glob', readonly text: string, readonly sqlGlob: string, readonly ftsPhrase: string | undefined, readonly regex: RegExp }

/** FTS5's trigram index answers only for runs of three characters or more. */
const TRIGRAM = 3

/** A phrase for `MATCH`: the text in double quotes, inner quotes doubled; nothing else is special there. */
function phrase (text: string): string | undefined {
  return [...text].length >= TRIGRAM ? `"${text.replace(/"/g, '""')}"` : undefined
}

export function parsePattern (text: string, options: { readonly literal?: boolean } = {}): Pattern {
  if (options.literal === true || !/[*?]/.test(text)) return { kind: 'substring', text, ftsPhrase: phrase(text) }
  // The longest run without wildcards narrows the rows through the trigram index first.
  const longest = text.split(/[*?]+/).sort((a, b) => [...b].length - [...a].length)[0] ?? ''
  // SQLite's GLOB: `[` opens a class, so a literal one is the class `[[]`.
  const sqlGlob = text.toLowerCase().replace(/\[/g, '[[]')
  const body = [...text].map(c => c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[.+^${}()|[\]\\]/g, '\\$&')).join('')
  return { kind: 'glob', text, sqlGlob, ftsPhrase: phrase(longest), regex: new RegExp(`(?:^|/)${body}$`, 'is') }
}
