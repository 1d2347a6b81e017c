import { describe, expect, it } from 'vitest'
import { execFileSync } from 'node:child_process'
import { safeText } from '../../src/util/safe-text.js'
import { shellWord } from '../../src/util/shell-word.js'

const NAMES = [
  'notes/plain.txt', 'notes/with space', "notes/it's", 'notes/line\nbreak', 'notes/esc\u001b[2J', 'notes/c1\u009b31m',
  'notes/q\u202eevil', 'notes/literal\\u202e', 'notes/bell\u0007 and \u2066isolate\u2069', 'notes/snow ☃ and 😀', '-rf',
  '=ls', '~root', 'a;touch PWNED', 'notes/o\u0085c1'
]

describe('shellWord', () => {
  it('is one word bash reads back as the same bytes, and shows nothing a terminal would act on', () => {
    for (const name of NAMES) {
      const word = shellWord(name)
      expect(safeText(word), JSON.stringify(name)).toBe(word)
      // The same bytes back whatever the locale: a paste may land in a shell under LC_ALL=C.
      for (const locale of ['C.UTF-8', 'C']) {
        const back = execFileSync('bash', ['-c', `printf %s ${word}`], { env: { ...process.env, LC_ALL: locale } })
        expect(back.equals(Buffer.from(name)), `${JSON.stringify(name)} as ${word} under ${locale}`).toBe(true)
      }
    }
  })
})
