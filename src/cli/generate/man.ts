import type { CommandModel } from './command-model.js'
import { everyCommand } from './command-model.js'
import { helpBlocks } from './help-blocks.js'

/** Text as roff reads it literally: backslashes and hyphens escaped. */
function roff (text: string): string {
  return text.replace(/\\/g, '\\e').replace(/-/g, '\\-')
}

/** A text line that roff never takes for a request (one starting with `.` or `'`). */
function textLine (line: string): string {
  return /^[.']/.test(line) ? `\\&${line}` : line
}

/** Help text with its code spans in bold, as man pages show what is typed. */
function roffInline (text: string): string {
  return textLine(text.split(/`([^`]*)`/).map((part, i) => i % 2 === 1 ? `\\fB${roff(part)}\\fR` : roff(part)).join(''))
}

/** A term such as `--at <time>`: the option in bold, its value in italics. */
function roffTerm (term: string): string {
  return term.split(/(\s*[<[][^>\]]*[>\]])/).map(part => part.trim() === '' ? part : /^\s*[<[]/.test(part) ? `\\fI${roff(part)}\\fR` : `\\fB${roff(part)}\\fR`).join('')
}

/** A page's name: `cidsync-key-export`. */
export function manName (command: CommandModel): string {
  return command.path.join('-')
}

function detailsRoff (details: string): string[] {
  const out: string[] = []
  const blocks = helpBlocks(details)
  if (blocks.length > 0 && blocks[0]?.kind !== 'heading') out.push('.SH DETAILS')
  for (const block of blocks) {
    if (block.kind === 'heading') out.push(`.SH ${roff(block.text.toUpperCase())}`)
    else if (block.kind === 'paragraph') out.push('.PP', roffInline(block.text))
    else if (block.kind === 'list') for (const item of block.items) out.push('.IP \\(bu 2', roffInline(item))
    else out.push('.PP', '.RS 4', '.nf', ...block.lines.map(line => textLine(roff(line))), '.fi', '.RE')
  }
  return out
}

/** The man page (section 1) of one command. */
export function manPage (command: CommandModel, version: string): string {
  const name = manName(command)
  const out: string[] = [
    `.TH "${roff(name.toUpperCase())}" "1" "" "cidsync ${roff(version)}" "cidsync manual"`,
    // Left-aligned and unhyphenated: option names and paths stay whole, as they are typed.
    '.ad l',
    '.nh',
    '.SH NAME',
    `${roff(name)} \\- ${roffInline(command.description)}`,
    '.SH SYNOPSIS',
    `\\fB${roff(command.path.join(' '))}\\fR ${roff(command.usage.slice(command.path.join(' ').length).trim())}`,
    '.SH DESCRIPTION',
    roffInline(command.description)
  ]
  if (command.arguments.length > 0) {
    out.push('.SH ARGUMENTS')
    for (const argument of command.arguments) out.push('.TP', `\\fI${roff(argument.term)}\\fR`, roffInline(argument.description))
  }
  if (command.options.length > 0) {
    out.push('.SH OPTIONS')
    for (const option of command.options) out.push('.TP', roffTerm(option.flags), roffInline(option.description))
  }
  if (command.commands.length > 0) {
    out.push('.SH COMMANDS')
    let group = ''
    for (const sub of command.commands) {
      if (sub.group !== group && sub.group !== '') out.push('.SS', roff(sub.group.replace(/:$/, '')))
      group = sub.group
      out.push('.TP', `\\fB${roff(sub.name)}\\fR`, roffInline(sub.description), '.br', `See \\fB${roff(manName(sub))}\\fR(1).`)
    }
  }
  out.push(...detailsRoff(command.details))
  const related = [command.path.length > 1 ? command.path.slice(0, -1).join('-') : undefined, ...command.commands.map(manName)]
    .filter((page): page is string => page !== undefined)
  if (related.length > 0) out.push('.SH SEE ALSO', related.map(page => `\\fB${roff(page)}\\fR(1)`).join(', '))
  return `${out.join('\n')}\n`
}

/** Every command's man page, by file name: `cidsync.1`, `cidsync-restore.1`, `cidsync-key-export.1`. */
export function manPages (root: CommandModel, version: string): Map<string, string> {
  return new Map(everyCommand(root).map(command => [`${manName(command)}.1`, manPage(command, version)]))
}
