import { describe, expect, it } from 'vitest'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

const MISSING = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'

describe('a pointer that names something cidsync cannot use', () => {
  it('is refused by pointer put unless --force; once there, snapshot names the repair, and pointer repair --yes mends it', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'))
    await writeFile(join(dir, 'notes', 'a.md'), 'a')
    const config = join(dir, 'c.toml')
    await writeFile(config, 'state_dir = "state"\n[[folders]]\nname = "notes"\npath = "notes"\n[status]\nlisten = "127.0.0.1:0"\n')
    const first = await runCli(['snapshot', '--json', '--config', config])
    expect(first.code).toBe(0)
    const { cid } = JSON.parse(first.stdout) as { cid: string }

    const refused = await runCli(['pointer', 'put', MISSING, '--config', config])
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain(`refused: ${MISSING} is not a cidsync snapshot this device can open`)
    expect(refused.stderr).toContain('--force')
    // A real snapshot is accepted, and its entry count is read from it.
    expect(JSON.parse((await runCli(['pointer', 'put', cid, '--json', '--config', config])).stdout)).toMatchObject({ snapshotCid: cid, memories: 1 })
    // A pointer that opens: said to be fine, not a question.
    const fine = await runCli(['pointer', 'repair', '--config', config])
    expect(fine).toMatchObject({ code: 0, stdout: `nothing to repair: the pointer of default on mainnet names ${cid}, which opens here (1 entry)\n` })

    expect((await runCli(['pointer', 'put', MISSING, '--force', '--config', config])).code).toBe(0)
    await writeFile(join(dir, 'notes', 'b.md'), 'b')
    const stuck = await runCli(['snapshot', '--config', config])
    expect(stuck.code).toBe(1)
    expect(stuck.stderr).toContain(`names ${MISSING}, which cannot be used here`)
    expect(stuck.stderr).toContain('run `cidsync pointer repair`')
    expect(stuck.stderr).toContain('[ERR_POINTER_UNREADABLE]')

    const unconfirmed = await runCli(['pointer', 'repair', '--config', config])
    expect(unconfirmed.code).toBe(2)
    expect(unconfirmed.stderr).toContain(`the pointer of default on mainnet names ${MISSING}, which cannot be used here`)
    expect(unconfirmed.stderr).toContain('add --yes')
    const repaired = await runCli(['pointer', 'repair', '--yes', '--json', '--config', config])
    expect(repaired.code).toBe(0)
    const after = JSON.parse(repaired.stdout) as { cid: string, entries: number }
    expect(after.entries).toBe(2)
    expect(JSON.parse((await runCli(['pointer', 'get', '--json', '--config', config])).stdout)).toMatchObject({ snapshotCid: after.cid, memories: 2 })
    // Nothing new: snapshot --json says what the pointer holds, not 0.
    expect(JSON.parse((await runCli(['snapshot', '--json', '--config', config])).stdout)).toMatchObject({ cid: after.cid, entries: 2, skipped: true })
  })
})
