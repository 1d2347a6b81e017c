import { describe, expect, it } from 'vitest'
import type { CID } from 'multiformats/cid'
import { CID_PROFILES, CidBuilder } from '../../src/content/index.js'
import { AddTree, MAX_PROGRESS_LINES, type AddLine } from '../../src/local-service/routes/add-tree.js'

const profile = CID_PROFILES['kubo-cidv1']
const link = (text: string): ReturnType<CidBuilder['finishLink']> => new CidBuilder(profile).update(new TextEncoder().encode(text)).finishLink()

function add (tree: AddTree, path: string, text = path): void {
  tree.file(path === '' ? [] : path.split('/'), 'text/plain').done(link(text))
}

function names (lines: AddLine[]): string[] {
  return lines.map(l => l.Name)
}

describe('AddTree: parts placed and answered as Kubo does', () => {
  it('adds each top-level name on its own: its files in order, then its directories, children first', () => {
    const tree = new AddTree(false)
    for (const path of ['d/z.txt', 'd/b/y.txt', 'd/a/x.txt', 'top.txt']) add(tree, path)
    tree.directory(['e'])
    const blocks: CID[] = []
    const { lines, roots } = tree.finish(profile, cid => { blocks.push(cid) })
    expect(names(lines)).toEqual(['d/z.txt', 'd/b/y.txt', 'd/a/x.txt', 'd/a', 'd/b', 'd', 'top.txt', 'e'])
    expect(roots.map(r => [r.name, r.mime])).toEqual([['d', 'application/x-directory'], ['top.txt', 'text/plain'], ['e', 'application/x-directory']])
    expect(blocks.length).toBe(4)
  })

  it('wraps every part in one directory named "", answered last', () => {
    const tree = new AddTree(true)
    for (const path of ['b.txt', 'd/x.txt', 'a.txt']) add(tree, path)
    const { lines, roots } = tree.finish(profile, () => {})
    expect(names(lines)).toEqual(['b.txt', 'd/x.txt', 'a.txt', 'd', ''])
    expect(roots.length).toBe(1)
    // Listed by its CID: it has no name of its own.
    expect(roots[0]?.name).toBe((lines.at(-1) as { Hash: string }).Hash)
  })

  it('names an unnamed part by its CID, wrapped or not', () => {
    const cid = link('no name').cid.toString()
    const plain = new AddTree(false)
    add(plain, '', 'no name')
    expect(names(plain.finish(profile, () => {}).lines)).toEqual([cid])
    const wrapped = new AddTree(true)
    add(wrapped, '', 'no name')
    expect(names(wrapped.finish(profile, () => {}).lines)).toEqual([cid, ''])
  })

  it('puts progress before each file\'s line, Bytes left out at 0, and bounds the lines', () => {
    const tree = new AddTree(false)
    const slot = tree.file(['big'], 'x')
    slot.progress(262144, false)
    slot.progress(300000, true)
    slot.done(link('big'))
    const empty = tree.file(['empty'], 'x')
    empty.progress(0, true)
    empty.done(link(''))
    const { lines } = tree.finish(profile, () => {})
    expect(lines.slice(0, 2)).toEqual([{ Name: 'big', Bytes: 262144 }, { Name: 'big', Bytes: 300000 }])
    expect(lines[3]).toEqual({ Name: 'empty' })

    const many = new AddTree(false)
    const long = many.file(['long'], 'x')
    for (let i = 1; i <= MAX_PROGRESS_LINES + 10; i++) long.progress(i, false)
    long.progress(MAX_PROGRESS_LINES + 10, true)
    long.done(link('long'))
    const bounded = many.finish(profile, () => {}).lines
    expect(bounded.length).toBe(MAX_PROGRESS_LINES + 2)
    expect(bounded.at(-2)).toEqual({ Name: 'long', Bytes: MAX_PROGRESS_LINES + 10 })
  })

  it('refuses a path sent twice, a name that is a file and a directory, and a directory Kubo would shard', () => {
    const twice = new AddTree(false)
    add(twice, 'd/a.txt')
    expect(() => { add(twice, 'd/a.txt') }).toThrow('two parts are named a.txt')
    const both = new AddTree(false)
    add(both, 'd')
    expect(() => { add(both, 'd/a.txt') }).toThrow('d is sent as a file and as a directory')
    const wide = new AddTree(false)
    // 1000 entries of 250-byte names and 36-byte CIDs: past Kubo's 256 KiB.
    for (let i = 0; i < 1000; i++) add(wide, `w/${String(i).padStart(250, '0')}`)
    expect(() => wide.finish(profile, () => {})).toThrow('Kubo would shard it')
    expect(() => new AddTree(true).finish(profile, () => {})).toThrow('no file in the body')
  })
})
