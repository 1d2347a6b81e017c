import { describe, expect, it } from 'vitest'
import { execFileSync } from 'node:child_process'
import { safeText } from '../../src/util/safe-text.js'
import { shellWord } from '../../src/util/shell-word.js'

const NAMES = [
  'notes/plain.txt', 'notes/with space', "notes/it's", 'notes/line\nbreak', 'notes/esc\u001b[2J', 'notes/c1\u009b31m',
  'notes/q\u202eevil', 'notes/literal\\u202e', 'notes/bell\u0007 and \u2066isolate\u2069', 'notes/snow ☃ and 😀', '-rf'
]

describe('shellWord', () => {
  it('is one word bash reads back as the same bytes, and shows nothing a terminal would act on', () => {
    for (const name of NAMES) {
      const word = shellWord(name)
      expect(safeText(word), JSON.stringify(name)).toBe(word)
      const back = execFileSync('bash', ['-c', `printf %s ${word}`], { env: { ...process.env, LC_ALL: 'C.UTF-8' } })
      expect(back.equals(Buffer.from(name)), `${JSON.stringify(name)} as ${word}`).toBe(true)
    }
  })
})
