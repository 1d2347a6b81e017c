import { describe, expect, it } from 'vitest'
import { mkdir, readdir, realpath, rename, symlink } from 'node:fs/promises'
import { join } from 'node:path'
import { CID } from 'multiformats/cid'
import { dropUnseal, startUnseal } from '../../src/custody/unseal-jobs.js'
import { TargetPathError } from '../../src/errors.js'
import { useTempDir } from '../helpers/temp-dir.js'

const cid = 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku'
const job = (path: string, dir: string, id: number) => ({
  type: 'unseal' as const, id, path, key: new Uint8Array(32), cid, cidBytes: CID.parse(cid).bytes, size: 1, profile: 'kubo-cidv1' as const, mtimeMs: 0, mode: 0o600, dir
})

describe('a restore\'s temp file is made where it was checked, before a byte is written', () => {
  it('a directory swapped for a symlink before the temp is made: refused, nothing written there, nothing left', async () => {
    const root = await useTempDir()
    await mkdir(join(root, 'target', 'sub'), { recursive: true })
    await mkdir(join(root, 'attacker'))
    const checked = await realpath(join(root, 'target', 'sub'))
    // The restore checked target/sub; another user swaps it for a link to a directory of theirs.
    await rename(join(root, 'target', 'sub'), join(root, 'target', 'moved'))
    await symlink(join(root, 'attacker'), join(root, 'target', 'sub'))
    expect(() => { startUnseal(job(join(root, 'target', 'sub', '.f.cidsync-000000000001.part'), checked, 1)) }).toThrow(TargetPathError)
    expect(await readdir(join(root, 'attacker'))).toEqual([])
    expect(await readdir(join(root, 'target', 'moved'))).toEqual([])
  })

  it('made in the directory checked: written there, private', async () => {
    const root = await useTempDir()
    await mkdir(join(root, 'target'))
    const checked = await realpath(join(root, 'target'))
    startUnseal(job(join(root, 'target', '.f.cidsync-000000000002.part'), checked, 2))
    expect(await readdir(join(root, 'target'))).toEqual(['.f.cidsync-000000000002.part'])
    dropUnseal(2)
    expect(await readdir(join(root, 'target'))).toEqual([])
  })
})
