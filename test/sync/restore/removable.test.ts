import { describe, expect, it } from 'vitest'
import { mkdir, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { cidProfile, fileCid } from '../../../src/content/index.js'
import { openIndex } from '../../../src/index/index.js'
import { removableEntry } from '../../../src/sync/index.js'
import { useTempDir } from '../../helpers/temp-dir.js'

const A = 'aaaaaaaa-0000-4000-8000-000000000000'
const B = 'bbbbbbbb-0000-4000-8000-000000000000'
const C = 'cccccccc-0000-4000-8000-000000000000'
const meta = (kind: 'dir' | 'symlink', target: string | null = null): Record<string, unknown> => ({ kind, mode: 0o755, uid: 0, gid: 0, owner: null, group: null, target, linkGroup: null })

describe('removableEntry', () => {
  it('holds a file whose bytes another device\'s row names, a link whose target one names, a directory a row names; nothing else', async () => {
    const dir = await useTempDir()
    const notes = join(dir, 'notes')
    await mkdir(join(notes, 'recorded'), { recursive: true })
    await mkdir(join(notes, 'new-dir'))
    await writeFile(join(notes, 'same.txt'), 'as published')
    await writeFile(join(notes, 'edited.txt'), 'changed since')
    await writeFile(join(notes, 'new.txt'), 'never published')
    await symlink('same.txt', join(notes, 'link'))
    await symlink('elsewhere', join(notes, 'moved-link'))
    const published = (await fileCid(join(notes, 'same.txt'), cidProfile('kubo-cidv1'))).cid.toString()
    const index = openIndex(join(dir, 'rows.sqlite'))
    try {
      index.entries.registerDevice(A, 'laptop')
      index.entries.apply(A, [
        { kind: 'upsert', folder: 'notes', path: 'same.txt', size: 12, mtimeMs: 1, cid: published, cidProfile: 'kubo-cidv1' },
        { kind: 'upsert', folder: 'notes', path: 'edited.txt', size: 12, mtimeMs: 1, cid: published, cidProfile: 'kubo-cidv1' },
        { kind: 'upsert', folder: 'notes', path: 'link', size: 0, mtimeMs: 1, cid: null, cidProfile: 'kubo-cidv1', meta: meta('symlink', 'same.txt') },
        { kind: 'upsert', folder: 'notes', path: 'moved-link', size: 0, mtimeMs: 1, cid: null, cidProfile: 'kubo-cidv1', meta: meta('symlink', 'same.txt') },
        { kind: 'upsert', folder: 'notes', path: 'recorded/', size: 0, mtimeMs: 1, cid: null, cidProfile: 'kubo-cidv1', meta: meta('dir') }
      ] as Parameters<typeof index.entries.apply>[1])
      index.entries.apply(A, [{ kind: 'delete', folder: 'notes', path: 'same.txt' }] as Parameters<typeof index.entries.apply>[1])
      const held = async (name: string, isDir = false, own = B): Promise<boolean> => await removableEntry(index, { shown: `notes/${name}${isDir ? '/' : ''}`, dir: isDir, parent: notes, name }, own) !== undefined
      // Bytes another device's row names (its deletion kept the last version's CID): that device's.
      expect(await held('same.txt')).toBe(true)
      // Bytes only this device's rows name are its own: kept, stored or not.
      expect(await held('same.txt', false, A)).toBe(false)
      expect(await held('link', false, A)).toBe(false)
      expect(await held('edited.txt')).toBe(false)
      expect(await held('new.txt')).toBe(false)
      expect(await held('link')).toBe(true)
      expect(await held('moved-link')).toBe(false)
      expect(await held('recorded', true)).toBe(true)
      expect(await held('new-dir', true)).toBe(false)
      expect(await held('gone.txt')).toBe(false)
    } finally {
      index.close()
    }
  })
  it('asks the newest row of the path alone: a bystander\'s copy of this device\'s edit does not make it removable', async () => {
    const dir = await useTempDir()
    const notes = join(dir, 'notes')
    await mkdir(notes)
    await writeFile(join(notes, 'edit.txt'), 'edited on this device')
    const edited = (await fileCid(join(notes, 'edit.txt'), cidProfile('kubo-cidv1'))).cid.toString()
    const index = openIndex(join(dir, 'rows.sqlite'))
    try {
      for (const [id, name] of [[A, 'a'], [C, 'c']] as const) index.entries.registerDevice(id, name)
      const row = (cid: string): Parameters<typeof index.entries.apply>[1] => [{ kind: 'upsert', folder: 'notes', path: 'edit.txt', size: 21, mtimeMs: 1, cid, cidProfile: 'kubo-cidv1' }] as Parameters<typeof index.entries.apply>[1]
      // C took this device's edit; then A, which never had it, deleted its older version.
      index.entries.apply(C, row(edited))
      index.entries.apply(A, row('bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'))
      const before = Date.now()
      for (let spins = 0; Date.now() === before && spins < 10_000_000; spins++);
      index.entries.apply(A, [{ kind: 'delete', folder: 'notes', path: 'edit.txt' }] as Parameters<typeof index.entries.apply>[1])
      const held = async (): Promise<boolean> => await removableEntry(index, { shown: 'notes/edit.txt', dir: false, parent: notes, name: 'edit.txt' }, B) !== undefined
      expect(await held()).toBe(false)
      // Once the newest row is C's with these bytes (C deleted this very version), they go.
      const at = Date.now()
      for (let spins = 0; Date.now() === at && spins < 10_000_000; spins++);
      index.entries.apply(C, [{ kind: 'delete', folder: 'notes', path: 'edit.txt' }] as Parameters<typeof index.entries.apply>[1])
      expect(await held()).toBe(true)
    } finally {
      index.close()
    }
  })
})
