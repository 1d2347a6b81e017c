import { describe, expect, it } from 'vitest'
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { lstat, mkdir, readdir, readFile, realpath, rename, rm, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { loadConfig } from '../../../src/config/index.js'
import { openIndex } from '../../../src/index/index.js'
import { deletedStillThere, extraEntries, removeExtra } from '../../../src/sync/index.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { writeTestConfig } from '../../helpers/config-file.js'

const A = 'aaaaaaaa-0000-4000-8000-000000000000'

describe('restore --files --delete', () => {
  it('removes only what the tree lacks: never an ignored path, cidsync\'s own dirs, a temp or a FIFO; nothing through a directory swapped for a symlink', async () => {
    const dir = await useTempDir()
    const notes = join(dir, 'notes')
    await mkdir(join(notes, '.state'), { recursive: true })
    await mkdir(join(notes, 'empty'))
    await mkdir(join(notes, 'sub'))
    for (const name of ['kept.md', 'extra.md', 'app.log', '.state/index.sqlite', '.kept.md.cidsync-0123456789ab.part', 'sub/gone.md']) await writeFile(join(notes, name), name)
    const fifo = spawnSync('mkfifo', [join(notes, 'pipe')]).status === 0
    const config = loadConfig({ configPath: await writeTestConfig(dir, { state_dir: 'notes/.state', folders: [{ name: 'notes', path: 'notes', ignore: ['*.log'] }] }), env: {} })
    const index = openIndex(join(dir, 'rows.sqlite'))
    index.entries.registerDevice(A, 'laptop')
    index.entries.apply(A, [{ kind: 'upsert', folder: 'notes', path: 'kept.md', size: 7, mtimeMs: 1, cid: 'cid-kept', cidProfile: 'kubo-cidv1' }])
    const rows = index.entries.list()
    index.close()

    const extra = await extraEntries(config, undefined, rows, ['notes'])
    expect(extra.map(e => e.shown).sort()).toEqual(['notes/empty/', 'notes/extra.md', 'notes/sub/', 'notes/sub/gone.md'])

    // The walked directory swapped for a link to another one before its entry is removed.
    const elsewhere = join(dir, 'elsewhere')
    await mkdir(elsewhere)
    await writeFile(join(elsewhere, 'gone.md'), 'not the tree\'s')
    await rename(join(notes, 'sub'), join(dir, 'sub-moved'))
    await symlink(elsewhere, join(notes, 'sub'))
    const inSub = extra.find(e => e.shown === 'notes/sub/gone.md')
    if (inSub === undefined) throw new Error('notes/sub/gone.md was not listed')
    // Refused (the link is not followed), and said: the caller counts it as not deleted.
    await expect(removeExtra(inSub)).rejects.toMatchObject({ code: 'ERR_TARGET_PATH' })
    expect(existsSync(join(elsewhere, 'gone.md'))).toBe(true)

    for (const entry of extra.filter(e => !e.shown.startsWith('notes/sub'))) await removeExtra(entry)
    expect((await readdir(notes)).sort()).toEqual(['.kept.md.cidsync-0123456789ab.part', '.state', 'app.log', 'kept.md', ...(fifo ? ['pipe'] : []), 'sub'].sort())
    expect(await readdir(join(notes, '.state'))).toEqual(['index.sqlite'])
  })
  it('names the deleted paths still at the target, through real directories alone, and no more', async () => {
    const dir = await useTempDir()
    const notes = join(dir, 'notes')
    await mkdir(join(notes, 'sub'), { recursive: true })
    await writeFile(join(notes, 'back.md'), 'made again')
    await writeFile(join(notes, 'sub', 'here.md'), 'still here')
    // A directory the index holds as deleted, still there: counted once, as itself.
    await mkdir(join(notes, 'old-dir'))
    // A link to another directory that holds a file by a deleted path's name: not the tree's.
    const elsewhere = join(dir, 'elsewhere')
    await mkdir(elsewhere)
    await writeFile(join(elsewhere, 'gone.md'), 'not the tree\'s')
    await symlink(elsewhere, join(notes, 'linked'))
    const config = loadConfig({ configPath: await writeTestConfig(dir, { state_dir: 'state', folders: [{ name: 'notes', path: 'notes' }] }), env: {} })
    // A file deleted, then a directory made by its name (and the reverse): another path's now.
    await mkdir(join(notes, 'was-file'))
    await writeFile(join(notes, 'was-dir'), 'a file now')
    await writeFile(join(dir, 'outside.md'), 'outside the folder')
    // A FIFO at a deleted file's path: --delete never removes one, so it is not said to.
    spawnSync('mkfifo', [join(notes, 'now-a-pipe')])
    const deleted = new Set(['notes/back.md', 'notes/sub/here.md', 'notes/old-dir/', 'notes/linked/gone.md', 'notes/never.md', 'other/back.md',
      'notes/was-file', 'notes/was-dir/', 'notes/../outside.md', 'notes/now-a-pipe'])
    expect(await deletedStillThere(config, undefined, deleted)).toEqual(['notes/back.md', 'notes/old-dir/', 'notes/sub/here.md'])
    // Into another directory: what is there, not in the folder.
    const to = join(dir, 'to')
    await mkdir(join(to, 'notes'), { recursive: true })
    await writeFile(join(to, 'notes', 'back.md'), 'there too')
    expect(await deletedStillThere(config, to, deleted)).toEqual(['notes/back.md'])
    expect(await deletedStillThere(config, join(dir, 'empty'), deleted)).toEqual([])
  })
  it('under --to, removes nothing through the folder\'s directory swapped for a link after the walk, nor a file above the prefix', async () => {
    const dir = await useTempDir()
    const to = join(dir, 'to')
    await mkdir(join(to, 'notes', 'deep', 'dir'), { recursive: true })
    await writeFile(join(to, 'notes', 'extra.md'), 'not the tree\'s')
    const config = loadConfig({ configPath: await writeTestConfig(dir, { state_dir: 'state', folders: [{ name: 'notes', path: 'notes' }] }), env: {} })
    const extra = await extraEntries(config, to, [], ['notes'])
    const file = extra.find(e => e.shown === 'notes/extra.md')
    if (file === undefined) throw new Error('notes/extra.md was not listed')
    // Its directory is the real one under --to, never where a link there would lead.
    expect(file.parent).toBe(join(await realpath(to), 'notes'))
    const victim = join(dir, 'victim')
    await mkdir(victim)
    await writeFile(join(victim, 'extra.md'), 'someone else\'s')
    await rename(join(to, 'notes'), join(to, 'notes.away'))
    await symlink(victim, join(to, 'notes'))
    await expect(removeExtra(file)).rejects.toMatchObject({ code: 'ERR_TARGET_PATH' })
    expect(await readdir(victim)).toEqual(['extra.md'])
    await rm(join(to, 'notes'))
    await rename(join(to, 'notes.away'), join(to, 'notes'))
    // A prefix below a file of the same name as one of its directories: that file is not the prefix's.
    await rm(join(to, 'notes', 'deep'), { recursive: true })
    await writeFile(join(to, 'notes', 'deep'), 'mine')
    expect((await extraEntries(config, to, [], ['notes/deep/dir'])).map(e => e.shown)).toEqual([])
    expect((await extraEntries(config, to, [], ['notes/deep'])).map(e => e.shown)).toEqual(['notes/deep'])
  })
  it('removes a file a publish was found to hold only while it is still that file: one saved over since is kept', async () => {
    const dir = await useTempDir()
    const notes = join(dir, 'notes')
    await mkdir(notes)
    await writeFile(join(notes, 'held.md'), 'as the publish holds it')
    const config = loadConfig({ configPath: await writeTestConfig(dir, { state_dir: 'state', folders: [{ name: 'notes', path: 'notes' }] }), env: {} })
    const extra = await extraEntries(config, undefined, [], ['notes'], async (entry) => {
      const seen = await lstat(join(entry.parent, entry.name))
      return { ino: seen.ino, size: seen.size, mtimeMs: seen.mtimeMs }
    })
    const held = extra.find(e => e.shown === 'notes/held.md')
    if (held === undefined) throw new Error('notes/held.md was not listed')
    // An editor's save: new bytes in a new file, renamed over the old one.
    await writeFile(join(notes, '.held.md.swp'), 'new words no publish holds')
    await rename(join(notes, '.held.md.swp'), join(notes, 'held.md'))
    await expect(removeExtra(held)).rejects.toMatchObject({ code: 'ERR_TARGET_PATH' })
    expect(await readFile(join(notes, 'held.md'), 'utf8')).toBe('new words no publish holds')
  })
})
