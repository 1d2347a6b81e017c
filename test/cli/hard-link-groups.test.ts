import { describe, expect, it } from 'vitest'
import { link, lstat, mkdir, readFile, readdir, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok, shareKey } from './content-devices.js'

type Line = { type: string, path?: string, outcome?: string, reason?: string, [k: string]: unknown }
const parse = (s: string): Line[] => s.trim().split('\n').filter(l => l.startsWith('{')).map(l => JSON.parse(l) as Line)
const outcomesOf = (lines: Line[]): Record<string, string> => Object.fromEntries(lines.filter(l => l.type === 'file').map(l => [l.path, l.outcome]))

describe.skipIf(EXTERNAL)('a hard link group whose first name is kept or cannot be made', () => {
  it('names across directories: each name not brought back hands the group to the next; a symlinked dir receives nothing; all kept; get of some names', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const a = await contentDevice(root, service, 'a')
    const b = await contentDevice(root, service, 'b')
    await shareKey(a, b)
    for (const d of ['x', 'y', 'z']) await mkdir(join(a.folder, d))
    await writeFile(join(a.folder, 'x', 'h'), 'shared bytes')
    await link(join(a.folder, 'x', 'h'), join(a.folder, 'y', 'h'))
    await link(join(a.folder, 'x', 'h'), join(a.folder, 'z', 'h'))
    await ok(a, ['snapshot'])
    await ok(b, ['restore'])

    // 1. x/h is the user's own; y is a plain file, so y/h cannot be made: z/h could still be fetched.
    const one = join(root, 'one')
    await mkdir(join(one, 'notes', 'x'), { recursive: true })
    await writeFile(join(one, 'notes', 'x', 'h'), 'mine')
    await writeFile(join(one, 'notes', 'y'), 'a file where a dir was')
    const r1 = await b.run(['restore', '--files', '--to', one, '--json'])
    const l1 = parse(r1.stdout)
    expect(r1.code).not.toBe(0)
    expect(outcomesOf(l1)).toMatchObject({ 'notes/x/h': 'kept-different', 'notes/z/h': 'written' })
    expect(await readFile(join(one, 'notes', 'z', 'h'), 'utf8')).toBe('shared bytes')

    // 2. y is a symlink to a directory outside: nothing is written through it.
    const two = join(root, 'two')
    const outside = join(root, 'outside')
    await mkdir(outside)
    await mkdir(join(two, 'notes', 'x'), { recursive: true })
    await writeFile(join(two, 'notes', 'x', 'h'), 'mine')
    await symlink(outside, join(two, 'notes', 'y'))
    const r2 = await b.run(['restore', '--files', '--to', two, '--json'])
    expect(await readdir(outside)).toEqual([])
    expect(r2.code).not.toBe(0)

    // 3. Every name kept: all said, exit not 0.
    const three = join(root, 'three')
    for (const d of ['x', 'y', 'z']) { await mkdir(join(three, 'notes', d), { recursive: true }); await writeFile(join(three, 'notes', d, 'h'), `mine ${d}`) }
    const r3 = await b.run(['restore', '--files', '--to', three, '--json'])
    const l3 = parse(r3.stdout)
    expect(r3.code).not.toBe(0)
    expect(outcomesOf(l3)).toEqual({ 'notes/x/h': 'kept-different', 'notes/y/h': 'kept-different', 'notes/z/h': 'kept-different' })
    for (const d of ['x', 'y', 'z']) expect(await readFile(join(three, 'notes', d, 'h'), 'utf8')).toBe(`mine ${d}`)

    // 4. get of two names, the first of them kept.
    const four = join(root, 'four')
    await mkdir(join(four, 'notes', 'y'), { recursive: true })
    await writeFile(join(four, 'notes', 'y', 'h'), 'mine')
    const r4 = await b.run(['get', 'notes/y/h', 'notes/z/h', '--to', four, '--json'])
    const l4 = parse(r4.stdout)
    expect(outcomesOf(l4)).toEqual({ 'notes/y/h': 'kept-different', 'notes/z/h': 'written' })
    expect(await readFile(join(four, 'notes', 'z', 'h'), 'utf8')).toBe('shared bytes')
    expect(r4.code).not.toBe(0)

    // 5. --overwrite after 1: one inode of three names again.
    await ok(b, ['restore', '--files', '--to', three, '--overwrite'])
    const st = await Promise.all(['x', 'y', 'z'].map(async d => await lstat(join(three, 'notes', d, 'h'))))
    expect(st.map(s => s.ino)).toEqual([st[0]?.ino, st[0]?.ino, st[0]?.ino])
  }, 300_000)
})
