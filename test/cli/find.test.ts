import { describe, expect, it } from 'vitest'
import { readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { embeddedDeviceConfig, publishTwiceThenRollBack } from '../helpers/rolled-back.js'

const cidOf = async (file: string): Promise<string> => (await runCli(['cid', file])).stdout.split(' ')[0] ?? ''

describe('cidsync find, where, dupes, log', () => {
  it('gives a file\'s exact timeline from the history, searches a past publish, and finds where content is', async () => {
    const root = await useTempDir()
    const a = await embeddedDeviceConfig(root, 'a')
    const file = join(root, 'a', 'notes', 'plan.md')
    const cids: string[] = []
    const times: string[] = []
    for (const text of ['one', 'two, longer', 'three, the longest of all']) {
      await writeFile(file, text)
      cids.push(await cidOf(file))
      const snap = await runCli(['snapshot', '--config', a], { timeoutMs: 60_000 })
      expect(snap.code, snap.stderr).toBe(0)
      times.push(new Date().toISOString())
    }
    await writeFile(join(root, 'a', 'notes', 'copy.md'), 'one')
    expect((await runCli(['snapshot', '--config', a], { timeoutMs: 60_000 })).code).toBe(0)

    const log = await runCli(['log', 'notes/plan.md', '--json', '--config', a], { timeoutMs: 60_000 })
    expect(log.code, log.stderr).toBe(0)
    const versions = (JSON.parse(log.stdout) as { versions: Array<{ cid: string, size: number, current: boolean, fetchable: boolean }> }).versions
    // Newest first, as `history` lists publishes; --reverse for the oldest first.
    expect(versions.map(v => [v.cid, v.size, v.current])).toEqual([[cids[2], 25, true], [cids[1], 11, false], [cids[0], 3, false]])
    const reversed = await runCli(['log', 'notes/plan.md', '--json', '--reverse', '--cached', '--config', a])
    expect((JSON.parse(reversed.stdout) as { versions: Array<{ cid: string }> }).versions.map(v => v.cid)).toEqual(cids)
    // Cached now: no service needed, same answer.
    const cached = await runCli(['log', 'notes/plan.md', '--cached', '--config', a])
    expect(cached.code).toBe(0)
    expect(cached.stdout).toContain(cids[0])
    expect(cached.stdout.split('\n')[0]).toMatch(/^TIME\s+DEVICE\s+SIZE\s+CID\s+FETCH/)
    expect(cached.stdout.split('\n')[1]).toContain(cids[2])
    expect((await runCli(['log', 'notes/nothing.md', '--cached', '--config', a])).code).toBe(3)
    expect((await runCli(['log', 'plan.md', '--cached', '--config', a])).code).toBe(2)

    const now = await runCli(['find', 'plan', '--json', '--config', a])
    expect(now.code, now.stderr).toBe(0)
    expect(JSON.parse(now.stdout)).toMatchObject({ publish: null, results: [{ folder: 'notes', path: 'plan.md', size: 25, cid: cids[2] }] })
    const past = await runCli(['find', 'plan', '--json', '--at', times[0] as string, '--config', a], { timeoutMs: 60_000 })
    expect(past.code, past.stderr).toBe(0)
    expect(JSON.parse(past.stdout)).toMatchObject({ results: [{ path: 'plan.md', size: 3, cid: cids[0] }] })
    expect((await runCli(['find', 'copy', '--at', times[2] as string, '--config', a], { timeoutMs: 60_000 })).code).toBe(3)

    const whereFile = await runCli(['where', join(root, 'a', 'notes', 'copy.md'), '--json', '--config', a])
    expect(whereFile.code, whereFile.stderr).toBe(0)
    expect(JSON.parse(whereFile.stdout)).toMatchObject({ cid: cids[0], holders: [{ folder: 'notes', path: 'copy.md' }] })
    expect((await runCli(['where', cids[1] as string, '--config', a])).code).toBe(3)
    expect((await runCli(['where', 'not-a-cid', '--config', a])).code).toBe(2)

    const dupes = await runCli(['dupes', '--config', a])
    expect(dupes).toMatchObject({ code: 0, stdout: '0 B reclaimable on this device in all. Only extra copies on this device count: another device\'s copy frees nothing here.\n' })
  }, 240_000)

  it('says a file whose content is stored is stored, and that `get` can fetch it (find, where, log)', async () => {
    const root = await useTempDir()
    const a = await embeddedDeviceConfig(root, 'a')
    await writeFile(a, (await readFile(a, 'utf8')).replace('path = "a/notes"\n', 'path = "a/notes"\nstore = true\n'))
    const file = join(root, 'a', 'notes', 'kept.md')
    await writeFile(file, 'kept, stored')
    const snap = await runCli(['snapshot', '--config', a], { timeoutMs: 60_000 })
    expect(snap.code, snap.stderr).toBe(0)
    expect(snap.stderr).toContain('stored 1 file')
    const found = await runCli(['find', 'kept', '--json', '--config', a])
    expect(found.code, found.stderr).toBe(0)
    // Stored, and (deals on) sent for a deal: either way its content comes back.
    expect(JSON.parse(found.stdout)).toMatchObject({ results: [{ path: 'kept.md', stored: expect.stringMatching(/^(stored|sent-for-deal|deal-active)$/) }] })
    const held = await runCli(['where', file, '--config', a])
    expect(held.code, held.stderr).toBe(0)
    expect(held.stdout.split('\n')[0]).toMatch(/: (stored|sent-for-deal|deal-active)$/)
    const log = await runCli(['log', 'notes/kept.md', '--config', a], { timeoutMs: 60_000 })
    expect(log.code, log.stderr).toBe(0)
    expect(log.stdout).toMatch(/yes \((stored|sent-for-deal|deal-active)\)/)

    // Deleted: where says so (on which device, when) and what is still stored, not a bare "nothing found".
    const cid = await cidOf(file)
    await rm(file)
    expect((await runCli(['snapshot', '--config', a], { timeoutMs: 60_000 })).code).toBe(0)
    const gone = await runCli(['where', cid, '--config', a])
    expect(gone.code).toBe(3)
    expect(gone.stdout.split('\n')[0]).toMatch(new RegExp(`^${cid}: deleted on every device that held it; its content is still stored( \\((sent-for-deal|deal-active)\\))?, so it can be brought back$`))
    expect(gone.stdout).toMatch(/DELETED\s+PATH\n.*notes\/kept\.md \(deleted\)/)
    expect(gone.stderr).toMatch(new RegExp(`no device holds ${cid} now: notes/kept\\.md was deleted on device [0-9a-f]{8}.* at \\d{4}-\\d\\d-\\d\\d \\S+Z; \`cidsync log notes/kept\\.md --config \\S+\` lists its versions, and \`cidsync get notes/kept\\.md --config \\S+ --at TIME\` brings one back`))
    expect(JSON.parse((await runCli(['where', cid, '--json', '--config', a])).stdout)).toMatchObject({ held: false, holders: [{ path: 'kept.md', deleted: true }] })
  }, 120_000)

  it('log answers from the index before anything is published, saying there is no history yet', async () => {
    const root = await useTempDir()
    const a = await embeddedDeviceConfig(root, 'a')
    const file = join(root, 'a', 'notes', 'early.md')
    await writeFile(file, 'before the first publish')
    expect((await runCli(['snapshot', '--config', a], { timeoutMs: 60_000 })).code).toBe(0)
    // A namespace nothing was published to: what a daemon shows before its first publish.
    const log = await runCli(['log', 'notes/early.md', '--namespace', 'fresh', '--config', a], { timeoutMs: 60_000 })
    expect(log.code, log.stderr).toBe(0)
    expect(log.stdout).toContain(await cidOf(file))
    expect(log.stdout).toContain('nothing is published yet for namespace fresh')
  }, 120_000)

  it('shows names with terminal escapes neutralised and finds nothing with exit 3', async () => {
    const root = await useTempDir()
    const a = await embeddedDeviceConfig(root, 'a')
    await writeFile(join(root, 'a', 'notes', 'evil\u001b[31mred\u202e.txt'), 'x')
    await writeFile(join(root, 'a', 'notes', 'same.txt'), 'x')
    expect((await runCli(['snapshot', '--config', a], { timeoutMs: 60_000 })).code).toBe(0)
    const found = await runCli(['find', 'evil', '--config', a])
    expect(found.code).toBe(0)
    expect(found.stdout).toContain('notes/evil\\x1b[31mred\\u202e.txt')
    expect(found.stdout).not.toContain('\u001b')
    expect(found.stdout).not.toContain('\u202e')
    expect(found.stdout).toMatch(/STORED\s+PATH/)
    const none = await runCli(['find', 'nothing-like-it', '--config', a])
    expect(none.code).toBe(3)
    expect(none.stderr).toContain('[ERR_NOTHING_FOUND]')
    const dupes = await runCli(['dupes', '--config', a])
    expect(dupes.code).toBe(0)
    expect(dupes.stdout).toContain('1 B reclaimable here: 2 copies of 1 B')
    expect(dupes.stdout).toContain(', 2 on this device\n')
    expect(dupes.stdout).toContain('evil\\x1b[31m')
  }, 120_000)

  it('find --at refuses a pointer set back behind this device\'s own last publish, as restore --at does, and still answers for a time before it', async () => {
    const root = await useTempDir()
    const a = await embeddedDeviceConfig(root, 'a')
    const { first, between } = await publishTwiceThenRollBack(root, a)

    const refused = await runCli(['find', 'plan', '--at', new Date().toISOString(), '--config', a], { timeoutMs: 60_000 })
    expect(refused.code, refused.stderr).toBe(4)
    expect(refused.stderr).toContain('the pointer\'s history lacks this device\'s own publish')
    expect(refused.stderr).toContain('ERR_POINTER_ROLLED_BACK')
    expect(refused.stdout).not.toContain('plan.md')
    const before = await runCli(['find', 'plan', '--json', '--at', between, '--config', a], { timeoutMs: 60_000 })
    expect(before.code, before.stderr).toBe(0)
    expect(JSON.parse(before.stdout)).toMatchObject({ publish: { cid: first }, results: [{ path: 'plan.md', size: 3 }] })
  }, 240_000)
})
