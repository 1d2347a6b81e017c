import { describe, expect, it } from 'vitest'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

async function deviceConfig (root: string, name: string): Promise<string> {
  await mkdir(join(root, name, 'notes'), { recursive: true })
  const path = join(root, `${name}.toml`)
  await writeFile(path, `state_dir = "${name}/state"\n[[folders]]\nname = "notes"\npath = "${name}/notes"\n[service]\ndir = "${join(root, 'service')}"\n[status]\nlisten = "127.0.0.1:0"\n`)
  return path
}

describe('cidsync ls', () => {
  it('on a restored device that never ran the daemon, shows each row\'s device, and takes a short --device id', async () => {
    const root = await useTempDir()
    const a = await deviceConfig(root, 'a')
    await writeFile(join(root, 'a', 'notes', 'one.md'), 'one')
    expect((await runCli(['snapshot', '--config', a])).code).toBe(0)
    const idA = (JSON.parse((await runCli(['ls', '--json', '--config', a])).stdout) as Array<{ device: string }>)[0]?.device ?? ''
    expect(idA).toMatch(/^[0-9a-f-]{36}$/)

    const b = await deviceConfig(root, 'b')
    await runCli(['key', 'import', '--config', b], { input: (await runCli(['key', 'export', '--config', a])).stdout })
    expect((await runCli(['restore', '--config', b])).code).toBe(0)

    const ls = await runCli(['ls', '--config', b])
    expect(ls.code).toBe(0)
    expect(ls.stdout.split('\n')[0]).toMatch(/^DEVICE\s+SIZE\s+CID/)
    expect(ls.stdout).toContain(`${idA.slice(0, 8)}  `)
    expect(ls.stderr).toContain('this device has no rows yet')

    const byShortId = await runCli(['ls', '--json', '--device', idA.slice(0, 8), '--config', b])
    expect(byShortId.code).toBe(0)
    expect(JSON.parse(byShortId.stdout)).toMatchObject([{ device: idA, path: 'one.md' }])

    const unknown = await runCli(['ls', '--device', 'ffffffff', '--config', b])
    expect(unknown.code).toBe(3)
    expect(unknown.stderr).toContain(`no device ffffffff in the index: it knows ${idA.slice(0, 8)}`)
    expect(unknown.stderr).toContain('[ERR_DEVICE_NOT_FOUND]')
  })

  it('says on stderr when a prefix matches nothing because it does not start with a folder name, listing the folders', async () => {
    const root = await useTempDir()
    const a = await deviceConfig(root, 'a')
    await mkdir(join(root, 'a', 'notes', 'sub'))
    await writeFile(join(root, 'a', 'notes', 'sub', 'one.md'), 'one')
    expect((await runCli(['snapshot', '--config', a])).code).toBe(0)

    expect((await runCli(['ls', 'notes/sub', '--config', a])).stdout).toContain('notes/sub/one.md')
    const bare = await runCli(['ls', 'sub/one.md', '--config', a])
    expect(bare.code).toBe(3)
    expect(bare.stdout).not.toContain('one.md')
    expect(bare.stderr).toContain('cidsync: nothing matches sub/one.md: a prefix starts with the folder\'s name (folder/path, as `cidsync ls` prints them); the folders are: notes')
    const absolute = await runCli(['ls', join(root, 'a', 'notes'), '--config', a])
    expect(absolute.stderr).toContain('the folders are: notes')

    // A folder name with nothing under the rest of the prefix: nothing found, exit 3 as the README says.
    const none = await runCli(['ls', 'notes/nothing-here', '--config', a])
    expect(none).toMatchObject({ code: 3, stdout: '' })
    expect(none.stderr).toContain('cidsync: nothing in the index under notes/nothing-here [ERR_NOTHING_MATCHES]')
    const noneJson = await runCli(['ls', 'nosuch', '--json', '--config', a])
    expect(noneJson.code).toBe(3)
    expect(JSON.parse(noneJson.stdout)).toEqual([])

    // A leading slash, as a shell user writes a path, names the same folder.
    const slashed = await runCli(['ls', '/notes', '--config', a])
    expect(slashed.code).toBe(0)
    expect(slashed.stdout).toContain('notes/sub/one.md')
  })
})
