/**
 * The text a command's help adds after its options, read as blocks, so the same words make a
 * terminal's help, a Markdown page and a man page. The text is written to read well as it is:
 *
 * - blocks are separated by a blank line;
 * - a line of its own that ends with `:` (`Exit codes:`) is a heading;
 * - lines that start with `- ` are a list, an item's further lines indented by two spaces;
 * - lines indented by two spaces or more are kept as they are (examples, small tables);
 * - anything else is a paragraph, its lines joined.
 */
export type HelpBlock =
  | { readonly kind: 'heading', readonly text: string }
  | { readonly kind: 'paragraph', readonly text: string }
  | { readonly kind: 'list', readonly items: readonly string[] }
  | { readonly kind: 'code', readonly lines: readonly string[] }

const HEADING = /^[^\s-][^.]{0,58}:$/

function indentOf (line: string): number {
  return line.length - line.trimStart().length
}

function listItems (lines: readonly string[]): string[] {
  const items: string[] = []
  for (const line of lines) {
    if (line.startsWith('- ')) items.push(line.slice(2).trim())
    else items[items.length - 1] = `${items[items.length - 1] ?? ''} ${line.trim()}`.trim()
  }
  return items
}

function blockOf (lines: readonly string[]): HelpBlock[] {
  const [first, ...rest] = lines
  if (first === undefined) return []
  if (HEADING.test(first)) return [{ kind: 'heading', text: first.slice(0, -1) }, ...blockOf(rest)]
  if (lines.every(line => indentOf(line) >= 2)) {
    const common = Math.min(...lines.map(indentOf))
    return [{ kind: 'code', lines: lines.map(line => line.slice(common)) }]
  }
  if (first.startsWith('- ')) return [{ kind: 'list', items: listItems(lines) }]
  return [{ kind: 'paragraph', text: lines.map(line => line.trim()).join(' ') }]
}

/** The blocks of `text`, in order. */
export function helpBlocks (text: string): HelpBlock[] {
  const blocks: HelpBlock[] = []
  let lines: string[] = []
  for (const line of [...text.split('\n'), '']) {
    if (line.trim() !== '') { lines.push(line.replace(/\s+$/, '')); continue }
    blocks.push(...blockOf(lines))
    lines = []
  }
  return blocks
}
