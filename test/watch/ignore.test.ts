import { describe, expect, it } from 'vitest'
import { createIgnoreMatcher } from '../../src/watch/ignore.js'

describe('ignore globs, read as gitignore reads them', () => {
  it('always ignores a file get is still writing (unverified bytes), whatever the folder\'s rules', () => {
    const ignored = createIgnoreMatcher([])
    for (const path of ['.report.pdf.cidsync-0123456789ab.part', 'sub/.a.cidsync-abcdef012345.part']) expect(ignored(path), path).toBe(true)
    for (const path of ['report.pdf', 'x.part', '.a.cidsync-xyz.part', 'report.cidsync-0123456789ab.part']) expect(ignored(path), path).toBe(false)
  })

  it('a folder pattern with slashes only at its end (the old init default) matches at any depth', () => {
    const ignored = createIgnoreMatcher(['.git/**', 'node_modules/**', 'cache/'])
    for (const path of ['.git/HEAD', 'node_modules/x/index.js', 'app/node_modules/x/index.js', 'a/b/.git/objects/pack', 'deep/cache/blob', 'app/node_modules']) {
      expect(ignored(path), path).toBe(true)
    }
    for (const path of ['notes.md', 'git/HEAD', 'node_modules_not/x.js', 'a/cached/x']) expect(ignored(path), path).toBe(false)
  })

  it('the **/name/** defaults match at any depth; a leading / or a slash in the middle anchors at the root', () => {
    const ignored = createIgnoreMatcher(['**/node_modules/**', '**/.git/**', '/build/**', 'docs/*.tmp'])
    expect(ignored('node_modules/a.js')).toBe(true)
    expect(ignored('x/y/node_modules/a.js')).toBe(true)
    expect(ignored.itself('x/node_modules')).toBe(true)
    expect(ignored('sub/.git/objects/ab/cd')).toBe(true)
    expect(ignored('build/out.o')).toBe(true)
    expect(ignored('src/build/out.o')).toBe(false)
    expect(ignored('docs/a.tmp')).toBe(true)
    expect(ignored('more/docs/a.tmp')).toBe(false)
  })
})

describe('the ignore list init writes', () => {
  it('skips nested node_modules and .git objects, not just the ones at the root', async () => {
    const { renderConfigTemplate } = await import('../../src/config/template.js')
    const line = renderConfigTemplate().split('\n').find(l => l.startsWith('ignore = ')) ?? ''
    const ignored = createIgnoreMatcher(JSON.parse(line.slice('ignore = '.length)) as string[])
    for (const path of ['node_modules/a.js', 'web/node_modules/a/b.js', '.git/HEAD', 'vendor/lib/.git/objects/ab/cd', 'x/y.tmp']) expect(ignored(path), path).toBe(true)
    expect(ignored('web/src/app.js')).toBe(false)
  })
})
