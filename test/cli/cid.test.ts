import { describe, it, expect } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

describe('cidsync cid', () => {
  it('prints `CID  path` a line, in argument order, for the chosen profile', async () => {
    const dir = await useTempDir()
    await writeFile(join(dir, 'hello.txt'), 'hello world')
    await writeFile(join(dir, 'empty'), '')
    const v1 = await runCli(['cid', join(dir, 'hello.txt'), join(dir, 'empty')])
    expect(v1).toMatchObject({ code: 0, stderr: '' })
    expect(v1.stdout).toBe(`bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e  ${join(dir, 'hello.txt')}\n` +
      `bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku  ${join(dir, 'empty')}\n`)
    const v0 = await runCli(['cid', '--profile', 'unixfs-v0-2015', join(dir, 'hello.txt')])
    expect(v0.stdout).toBe(`Qmf412jQZiuVUtdgnB36FXFX7xg5V6KEbSJ4dpQuhkLyfD  ${join(dir, 'hello.txt')}\n`)
  })

  it('takes the profile from --config\'s cid_profile (the CIDs ls shows), unless --profile says otherwise', async () => {
    const dir = await useTempDir()
    await writeFile(join(dir, 'hello.txt'), 'hello world')
    const config = join(dir, 'config.toml')
    await writeFile(config, `state_dir = "state"\ncid_profile = "unixfs-v0-2015"\n[[folders]]\nname = "f"\npath = "${dir}"\n`)
    const fromConfig = await runCli(['cid', '--config', config, join(dir, 'hello.txt')])
    expect(fromConfig).toMatchObject({ code: 0, stdout: `Qmf412jQZiuVUtdgnB36FXFX7xg5V6KEbSJ4dpQuhkLyfD  ${join(dir, 'hello.txt')}\n` })
    const told = await runCli(['cid', '--config', config, '--profile', 'kubo-cidv1', join(dir, 'hello.txt')])
    expect(told.stdout).toBe(`bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e  ${join(dir, 'hello.txt')}\n`)
  })

  it('reads standard input for -', async () => {
    expect((await runCli(['cid', '-'], { input: 'hello world\n' })).stdout).toBe('bafkreifjjcie6lypi6ny7amxnfftagclbuxndqonfipmb64f2km2devei4  -\n')
  })

  it('still prints the files it can read, and exits 1 for the one it cannot', async () => {
    const dir = await useTempDir()
    await writeFile(join(dir, 'ok'), 'hello world')
    const result = await runCli(['cid', join(dir, 'missing'), join(dir, 'ok'), dir])
    expect(result.code).toBe(1)
    expect(result.stdout).toBe(`bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e  ${join(dir, 'ok')}\n`)
    expect(result.stderr).toContain(`could not hash ${join(dir, 'missing')}: no such file`)
    expect(result.stderr).toContain(`could not hash ${dir}: it is a directory`)
  })

  it('exits 2 for an unknown profile or no files', async () => {
    const bad = await runCli(['cid', '--profile', 'sha1', 'x'])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('unknown CID profile "sha1"')
    expect((await runCli(['cid'])).code).toBe(2)
  })
})
