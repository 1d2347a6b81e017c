import { describe, expect, it } from 'vitest'
import { partPath } from '../../src/local-service/routes/add-path.js'

describe('partPath: a part\'s filename as Kubo reads it', () => {
  it('decodes it as a query value, as Kubo does', () => {
    expect(partPath('dir%2Fa%20%C3%A9.txt')).toEqual(['dir', 'a é.txt'])
    expect(partPath('a+b%2B.txt')).toEqual(['a b+.txt'])
    expect(partPath('é.txt')).toEqual(['é.txt'])
  })

  it('keeps a name whose escapes are malformed as it was sent', () => {
    expect(partPath('100%.txt')).toEqual(['100%.txt'])
    expect(partPath('a%zz+b')).toEqual(['a%zz+b'])
  })

  it('cleans it as a path under /: nothing above the top', () => {
    expect(partPath('../../etc/passwd')).toEqual(['etc', 'passwd'])
    expect(partPath('/a//./b/../c/')).toEqual(['a', 'c'])
    expect(partPath('')).toEqual([])
    expect(partPath(undefined)).toEqual([])
  })

  it('refuses a name too long or too deep', () => {
    expect(() => partPath('a'.repeat(5000))).toThrow('longer than 4096 bytes')
    expect(() => partPath(Array(300).fill('d').join('/'))).toThrow('more than 256 levels')
  })
})
