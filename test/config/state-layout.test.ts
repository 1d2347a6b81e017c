import { describe, expect, it } from 'vitest'
import { readFile } from 'node:fs/promises'
import { STATE_NAMES } from '../../src/config/index.js'

describe('the state dir\'s layout', () => {
  it('names each file and folder once, and docs/configuration.md lists every one', async () => {
    const names = Object.values(STATE_NAMES)
    expect(new Set(names).size).toBe(names.length)
    const doc = await readFile(new URL('../../docs/configuration.md', import.meta.url), 'utf8')
    const section = doc.slice(doc.indexOf('## Files in the state dir'))
    const missing = names.filter(name => !section.includes(`\`${name}\``) && !section.includes(`\`${name}/`))
    expect(missing, 'add a row to "Files in the state dir" for each').toEqual([])
  })
})
