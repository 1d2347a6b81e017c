// How long the docs' sentences are: a newcomer reads short ones quickly.
// Usage: node scripts/prose-stats.mjs [--json] [--over N] [file.md ...]
// With no files: every Markdown file under docs/ (not docs/reference/, which the CLI writes),
// and README.md, CONTRIBUTING.md and AGENTS.md where present.
// --over N also prints each sentence longer than N words, with its line number (in --json: `long`).
//
// Counting rules:
// - fenced code blocks, HTML comments and headings are not prose, so they are skipped;
// - inline code counts as one word, a link as its text;
// - a sentence ends at . ! or ? before a space, at a blank line, at a list item's end and at
//   each table cell's end.
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

/** Abbreviations whose full stop does not end a sentence. */
const ABBREVIATIONS = /(?:^|\s)(?:e\.g|i\.e|etc|vs|cf|approx|no|fig)\.$/i

/** The files the figures are for, relative to the project root. */
export function defaultFiles (root = ROOT) {
  const found = []
  const walk = (dir) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`
      if (entry.isDirectory()) {
        if (path !== 'docs/reference') walk(path)
      } else if (entry.name.endsWith('.md')) {
        found.push(path)
      }
    }
  }
  walk('docs')
  for (const name of ['README.md', 'CONTRIBUTING.md', 'AGENTS.md']) {
    if (existsSync(join(root, name))) found.push(name)
  }
  return found.sort()
}

/** Plain words of a piece of Markdown prose: inline code one word, links their text. */
function plain (text) {
  return text
    .replace(/`[^`]*`/g, 'CODE')
    .replace(/!\[[^\]]*\]\([^)]*\)/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, ' ')
}

/** The number of words in a sentence: tokens with a letter or a digit. */
function wordCount (sentence) {
  return sentence.split(/\s+/).filter(token => /[\p{L}\p{N}]/u.test(token)).length
}

/** A block of prose cut at sentence ends. */
function split (text) {
  const out = []
  let start = 0
  const end = /[.!?]["')\]*_]*(?=\s|$)/g
  for (const match of text.matchAll(end)) {
    const stop = match.index + match[0].length
    const candidate = text.slice(start, stop)
    if (ABBREVIATIONS.test(candidate.slice(0, match.index - start + 1))) continue
    // "1.5", "v2." at the very end of a version: a digit right after means no end.
    out.push(candidate)
    start = stop
  }
  out.push(text.slice(start))
  return out.map(s => s.trim()).filter(s => wordCount(s) > 0)
}

/** Each sentence of a Markdown text, with the line it starts on. */
export function sentences (markdown) {
  const lines = markdown.split('\n')
  const found = []
  let block = []
  let blockLine = 0
  const flush = () => {
    if (block.length > 0) {
      for (const s of split(plain(block.join(' ')))) found.push({ line: blockLine, text: s, words: wordCount(s) })
    }
    block = []
  }
  let fence = null
  let comment = false
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]
    const trimmed = line.trim()
    if (fence !== null) {
      if (trimmed.startsWith(fence)) fence = null
      continue
    }
    if (comment) {
      if (trimmed.includes('-->')) comment = false
      continue
    }
    const opens = /^(`{3,}|~{3,})/.exec(trimmed)
    if (opens) {
      flush()
      fence = opens[1]
      continue
    }
    if (trimmed.startsWith('<!--')) {
      flush()
      if (!trimmed.includes('-->')) comment = true
      continue
    }
    if (trimmed === '' || /^#{1,6}\s/.test(trimmed) || /^(-{3,}|\*{3,}|_{3,})$/.test(trimmed)) {
      flush()
      continue
    }
    if (trimmed.startsWith('|')) {
      flush()
      if (/^\|[\s|:-]+\|$/.test(trimmed)) continue
      // Each cell is a sentence end; a cell of several sentences is cut as prose.
      const cells = trimmed.replace(/\\\|/g, '/').split('|').slice(1, -1)
      for (const cell of cells) {
        for (const s of split(plain(cell.trim()))) found.push({ line: i + 1, text: s, words: wordCount(s) })
      }
      continue
    }
    const item = /^(\s*)([-*+]|\d+[.)])\s+(.*)$/.exec(line)
    if (item) {
      flush()
      blockLine = i + 1
      block.push(item[3])
      continue
    }
    if (block.length === 0) blockLine = i + 1
    block.push(trimmed.replace(/^>\s?/, ''))
  }
  flush()
  return found
}

/** The figures for one text. */
export function stats (markdown) {
  const all = sentences(markdown)
  const words = all.reduce((sum, s) => sum + s.words, 0)
  const over = (n) => all.length === 0 ? 0 : all.filter(s => s.words > n).length / all.length
  return { sentences: all.length, words, mean: all.length === 0 ? 0 : words / all.length, over30: over(30), over40: over(40) }
}

function main () {
  const args = process.argv.slice(2)
  const json = args.includes('--json')
  const overAt = args.indexOf('--over')
  const overLimit = overAt >= 0 ? Number(args[overAt + 1]) : undefined
  const files = args.filter((a, i) => !a.startsWith('--') && (overAt < 0 || i !== overAt + 1))
  const paths = files.length > 0 ? files.map(f => ({ file: f, full: resolve(f) })) : defaultFiles().map(f => ({ file: f, full: join(ROOT, f) }))
  const rows = paths.map(({ file: path, full }) => {
    const text = readFileSync(full, 'utf8')
    return { file: path, ...stats(text), long: overLimit === undefined ? [] : sentences(text).filter(s => s.words > overLimit) }
  })
  if (json) {
    // The long sentences only when asked for, with their text and word count.
    const out = rows.map(({ long, ...row }) => overLimit === undefined ? row : { ...row, long: long.map(({ text, words }) => ({ text, words })) })
    process.stdout.write(JSON.stringify(out, null, 2) + '\n')
    return
  }
  const pct = (x) => `${(x * 100).toFixed(1)}%`.padStart(7)
  process.stdout.write(`${'file'.padEnd(28)} sentences  mean  >30 w  >40 w\n`)
  let sentencesAll = 0
  let wordsAll = 0
  let over30 = 0
  let over40 = 0
  for (const row of rows) {
    process.stdout.write(`${row.file.padEnd(28)} ${String(row.sentences).padStart(9)} ${row.mean.toFixed(1).padStart(5)} ${pct(row.over30)} ${pct(row.over40)}\n`)
    sentencesAll += row.sentences
    wordsAll += row.words
    over30 += row.over30 * row.sentences
    over40 += row.over40 * row.sentences
    for (const s of row.long) process.stdout.write(`  ${row.file}:${s.line} (${s.words}) ${s.text}\n`)
  }
  if (rows.length > 1 && sentencesAll > 0) {
    process.stdout.write(`${'all'.padEnd(28)} ${String(sentencesAll).padStart(9)} ${(wordsAll / sentencesAll).toFixed(1).padStart(5)} ${pct(over30 / sentencesAll)} ${pct(over40 / sentencesAll)}\n`)
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) main()
