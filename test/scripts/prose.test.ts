import { execFile } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { useTempDir } from '../helpers/temp-dir.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const SCRIPT = join(ROOT, 'scripts', 'prose-stats.mjs')

/** The most a doc's sentences may average, in words. */
const MAX_MEAN_WORDS = 22
/** The largest share of a doc's sentences that may run past 40 words. */
const MAX_SHARE_OVER_40 = 0.08

interface Figures {
  file: string
  sentences: number
  mean: number
  over30: number
  over40: number
  long?: Array<{ text: string, words: number }>
}

async function prose (args: string[]): Promise<Figures[]> {
  const { stdout } = await promisify(execFile)(process.execPath, [SCRIPT, '--json', ...args], { cwd: ROOT, timeout: 60_000 })
  return JSON.parse(stdout) as Figures[]
}

describe('the docs\' prose (scripts/prose-stats.mjs)', () => {
  it('is in short sentences: each doc averages at most 22 words a sentence, at most 8% past 40', async () => {
    const figures = await prose([])
    const files = figures.map(f => f.file)
    expect(files).toContain('README.md')
    expect(files).toContain('docs/architecture.md')
    expect(files.filter(f => f.startsWith('docs/reference/')), 'the CLI writes docs/reference/: not counted').toEqual([])
    const tooLong = figures
      .filter(f => f.mean > MAX_MEAN_WORDS || f.over40 > MAX_SHARE_OVER_40)
      .map(f => `${f.file}: ${f.mean.toFixed(1)} words a sentence, ${(f.over40 * 100).toFixed(1)}% over 40 (node scripts/prose-stats.mjs ${f.file} --over 40 lists them)`)
    expect(tooLong).toEqual([])
  })

  it('counts sentences as a reader meets them: code blocks skipped, inline code one word, each list item and table cell its own', async () => {
    const dir = await useTempDir()
    const page = join(dir, 'page.md')
    await writeFile(page, [
      '# A heading is not a sentence',
      '',
      'One short sentence here. A second one, e.g. with an abbreviation, ends here!',
      'This sentence runs on',
      'across two lines?',
      '',
      '```sh',
      'code blocks are not prose. None of this counts at all.',
      '```',
      '',
      '- a list item without a full stop',
      '- another item, `with --inline code` inside',
      '',
      '| key | meaning |',
      '|---|---|',
      '| `a` | the first cell |',
      '',
      'A [link with words](https://example.com/long/url) counts its text.',
      ''
    ].join('\n'))
    const [figures] = await prose(['--over', '0', page])
    expect(figures?.long?.map(s => [s.text, s.words])).toEqual([
      ['One short sentence here.', 4],
      ['A second one, e.g. with an abbreviation, ends here!', 9],
      ['This sentence runs on across two lines?', 7],
      ['a list item without a full stop', 7],
      ['another item, CODE inside', 4],
      ['key', 1],
      ['meaning', 1],
      ['CODE', 1],
      ['the first cell', 3],
      ['A link with words counts its text.', 7]
    ])
    expect(figures?.sentences).toBe(10)
  })
})
