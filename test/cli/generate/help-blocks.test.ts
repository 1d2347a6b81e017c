import { describe, expect, it } from 'vitest'
import { helpBlocks } from '../../../src/cli/generate/help-blocks.js'
import { inline } from '../../../src/cli/generate/markdown.js'

describe('help text as blocks', () => {
  it('reads headings, paragraphs (their lines joined), lists and indented examples', () => {
    const text = `
Exit codes:
  0  ok
  1  failure

What it does:
It reads the pointer.
It writes nothing.

- one item
  that goes on
- two

Examples:
  cidsync status --check`
    expect(helpBlocks(text)).toEqual([
      { kind: 'heading', text: 'Exit codes' },
      { kind: 'code', lines: ['0  ok', '1  failure'] },
      { kind: 'heading', text: 'What it does' },
      { kind: 'paragraph', text: 'It reads the pointer. It writes nothing.' },
      { kind: 'list', items: ['one item that goes on', 'two'] },
      { kind: 'heading', text: 'Examples' },
      { kind: 'code', lines: ['cidsync status --check'] }
    ])
  })

  it('takes a sentence that ends with a colon after a full stop for text, not a heading', () => {
    expect(helpBlocks('It looks first. Then:')).toEqual([{ kind: 'paragraph', text: 'It looks first. Then:' }])
  })

  it('writes Markdown that reads as the terminal does: code spans kept, the rest escaped, docs linked', () => {
    expect(inline('globs (* and ?) in [[mirrors]] for <name>: `a*b` (docs/find.md)'))
      .toBe('globs (\\* and ?) in \\[\\[mirrors\\]\\] for &lt;name>: `a*b` ([docs/find.md](../find.md))')
    expect(inline('max_lag_seconds and _private_')).toBe('max_lag_seconds and \\_private\\_')
  })
})
