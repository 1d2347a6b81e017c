import { describe, expect, it } from 'vitest'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok, shareKey } from './content-devices.js'

describe.skipIf(EXTERNAL)('get and restore --files on a device whose index is behind the pointer', () => {
  it('say which device published newer rows, bring them back with --at now, and say nothing once this device took them in', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await contentDevice(root, service, 'a')
    const b = await contentDevice(root, service, 'b')
    await writeFile(join(a.folder, 'todo.txt'), 'first\n')
    await ok(a, ['snapshot'])
    await shareKey(a, b)
    await ok(b, ['restore'])
    // Into a directory aside: a copy in b's folder would be b's own, newer row once b indexes it.
    await ok(b, ['get', 'notes/todo.txt', '--to', join(root, 'first')])
    expect(await readFile(join(root, 'first', 'notes', 'todo.txt'), 'utf8')).toBe('first\n')

    // a changes the file and publishes; b's index still holds the first version.
    await writeFile(join(a.folder, 'todo.txt'), 'second\n')
    await ok(a, ['snapshot'])
    const stale = await ok(b, ['get', 'notes/todo.txt', '--to', join(root, 'stale')])
    expect(stale.stderr).toMatch(/note: the pointer's publish of \S+ holds changes of .*\(.{36}\) that this index has not taken in/)
    expect(stale.stderr).toContain('`--at now`')
    expect(await readFile(join(root, 'stale', 'notes', 'todo.txt'), 'utf8')).toBe('first\n')
    const lines = (await ok(b, ['restore', '--files', '--dry-run', '--json'])).stdout.trim().split('\n').map(l => JSON.parse(l) as { type?: string, note?: string, devices?: unknown[] })
    expect(lines.find(l => l.type === 'note')).toMatchObject({ note: 'pointer-ahead', devices: [expect.objectContaining({ hostname: expect.any(String) as unknown })] })

    await ok(b, ['get', 'notes/todo.txt', '--at', 'now', '--to', join(root, 'now')])
    expect(await readFile(join(root, 'now', 'notes', 'todo.txt'), 'utf8')).toBe('second\n')

    // b takes a's rows in at its own publish: no note, and the newest version.
    await ok(b, ['snapshot'])
    const current = await ok(b, ['get', 'notes/todo.txt'])
    expect(current.stderr).not.toContain('note:')
    expect(await readFile(join(b.folder, 'todo.txt'), 'utf8')).toBe('second\n')
    // Its own rows never count: a publishes nothing new, and a's get says nothing either.
    expect((await ok(a, ['get', 'notes/todo.txt'])).stderr).not.toContain('note:')
  }, 300_000)
})
