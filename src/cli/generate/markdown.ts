import type { CommandModel } from './command-model.js'
import { helpBlocks } from './help-blocks.js'

/** Said at the top of every page: the pages are the program's help, and made from it. */
const MADE_BY = '<!-- Made by `npm run docs:reference` from the help in src/cli/: edit the help there, not this page. -->'

/** Markdown's special characters outside code spans, so help text reads as it does in a terminal. */
function escapeProse (text: string): string {
  return text
    .replace(/\\/g, '\\\\')
    .replace(/([*[\]|])/g, '\\$1')
    .replace(/<(?=\S)/g, '&lt;')
    .replace(/(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])/g, '\\_')
    // A doc named in the help links to it (the pages live in docs/reference/).
    .replace(/\bdocs\/([a-z0-9-]+\.md)(#[a-z0-9-]+)?/g, (_all, page: string, anchor?: string) => `[docs/${page}${anchor ?? ''}](../${page}${anchor ?? ''})`)
}

/** Help text as Markdown: code spans kept, everything else escaped. */
export function inline (text: string): string {
  return text.split(/(`[^`]*`)/).map((part, i) => i % 2 === 1 ? part : escapeProse(part)).join('')
}

/** A term such as `--at <time>` as code, whatever it holds. */
function code (text: string): string {
  return text.includes('`') ? `\`\` ${text} \`\`` : `\`${text}\``
}

/** GitHub's anchor for a heading. */
export function anchorOf (heading: string): string {
  return heading.toLowerCase().replace(/[^a-z0-9 -]/g, '').replace(/ /g, '-')
}

function detailsMarkdown (details: string, level: number): string[] {
  const blocks = helpBlocks(details)
  if (blocks.length === 0) return []
  const hashes = '#'.repeat(level)
  const out: string[] = blocks[0]?.kind === 'heading' ? [] : [`${hashes} Details`, '']
  for (const block of blocks) {
    if (block.kind === 'heading') out.push(`${hashes} ${inline(block.text)}`, '')
    else if (block.kind === 'paragraph') out.push(inline(block.text), '')
    else if (block.kind === 'list') out.push(...block.items.map(item => `- ${inline(item)}`), '')
    else out.push('```text', ...block.lines, '```', '')
  }
  return out
}

function commandMarkdown (command: CommandModel, level: number): string[] {
  const hashes = '#'.repeat(level + 1)
  const out: string[] = [inline(command.description), '', '```text', command.usage, '```', '']
  if (command.arguments.length > 0) {
    out.push(`${hashes} Arguments`, '', ...command.arguments.map(a => `- ${code(a.term)}${a.description === '' ? '' : `: ${inline(a.description)}`}`), '')
  }
  if (command.options.length > 0) {
    out.push(`${hashes} Options`, '', ...command.options.map(o => `- ${code(o.flags)}: ${inline(o.description)}`), '')
  }
  if (command.commands.length > 0) {
    out.push(`${hashes} Commands`, '', ...command.commands.map(sub => `- [${code(sub.path.join(' '))}](#${anchorOf(sub.path.join(' '))}): ${inline(sub.description)}`), '')
  }
  out.push(...detailsMarkdown(command.details, level + 1))
  for (const sub of command.commands) out.push(`${hashes} ${sub.path.join(' ')}`, '', ...commandMarkdown(sub, level + 1))
  return out
}

function page (lines: readonly string[]): string {
  return `${lines.join('\n').replace(/\n{3,}/g, '\n\n').trimEnd()}\n`
}

/** The page of one top-level command: its help, and its subcommands' below it. */
export function commandPage (command: CommandModel): string {
  return page([`# ${command.path.join(' ')}`, '', MADE_BY, '', ...commandMarkdown(command, 1)])
}

/** The file name of a top-level command's page. */
export function pageName (command: CommandModel): string {
  return `${command.name}.md`
}

/** The index: every command by the group `--help` lists it in, then the program's own help. */
export function indexPage (root: CommandModel): string {
  const out: string[] = ['# Command reference', '', MADE_BY, '', inline(root.description), '', '```text', root.usage, '```', '']
  const groups = [...new Set(root.commands.map(c => c.group))]
  for (const group of groups) {
    out.push(`## ${inline(group.replace(/:$/, ''))}`, '', '| command | what it does |', '|---|---|')
    for (const command of root.commands.filter(c => c.group === group)) {
      out.push(`| [${code(command.name)}](${pageName(command)}) | ${inline(command.description)} |`)
    }
    out.push('')
  }
  out.push('## Options', '', ...root.options.map(o => `- ${code(o.flags)}: ${inline(o.description)}`), '')
  out.push(...detailsMarkdown(root.details, 2))
  return page(out)
}

/** Every page, by file name: `README.md` (the index) and one per top-level command. */
export function markdownPages (root: CommandModel): Map<string, string> {
  return new Map([['README.md', indexPage(root)], ...root.commands.map(c => [pageName(c), commandPage(c)] as [string, string])])
}
