import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { mkdir, readdir, stat, truncate, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { sha256 } from 'multiformats/hashes/sha2'
import { openIndex } from '../../../src/index/index.js'
import { runCli } from '../../helpers/cli.js'
import { useTempDir } from '../../helpers/temp-dir.js'

const cli = async (args: string[]): Promise<{ code: number | null, stdout: string, stderr: string }> => await runCli(args, { timeoutMs: 120_000 })

/** A device storing 40 small files (one pack) and two large ones (their own objects), published. */
async function storedTree (): Promise<{ dir: string, config: string }> {
  const dir = await useTempDir()
  const kept = join(dir, 'kept')
  await mkdir(kept)
  const config = join(dir, 'config.toml')
  await writeFile(config, `state_dir = "state"\nnamespace = "every"\n[[folders]]\nname = "kept"\npath = "kept"\nstore = true\n` +
    `[service]\ndir = "${join(dir, 'service')}"\n[snapshot]\ndeal = false\n[status]\nlisten = "127.0.0.1:0"\n`)
  for (let i = 0; i < 40; i++) await writeFile(join(kept, `f-${String(i).padStart(2, '0')}.txt`), randomBytes(3000 + i * 97))
  await writeFile(join(kept, 'large-a.bin'), randomBytes(2 * 1024 * 1024 + 5))
  await writeFile(join(kept, 'large-b.bin'), randomBytes(3 * 1024 * 1024 + 11))
  const stored = await cli(['snapshot', '--config', config])
  expect(stored.code, stored.stderr).toBe(0)
  return { dir, config }
}

/** Records `path`'s content anew with its objects changed by `change`, and publishes it. */
async function recordAnew (dir: string, config: string, path: string, change: (objects: Array<[string, number, number]>) => Array<[string, number, number]>): Promise<void> {
  const index = openIndex(join(dir, 'state', 'index.sqlite'))
  try {
    const device = (index.entries.devices()[0] as { id: string }).id
    const [row] = index.content.lookup(index.entries.get(device, 'kept', path)?.cid ?? '')
    if (row === undefined) throw new Error(`no record of kept/${path}`)
    index.content.record(row.deviceId, 'test', [{ cid: row.cid, size: row.size, sealing: row.sealing, keyId: row.keyId, keySalt: row.keySalt, objects: JSON.stringify(change(JSON.parse(row.objects) as Array<[string, number, number]>)) }])
  } finally {
    index.close()
  }
  await writeFile(join(dir, 'kept', `change-${path}`), 'a change, so that a publish goes out')
  expect((await cli(['snapshot', '--config', config])).code).toBe(0)
}

describe('verify --content brings every stored file back in memory (sync/verify/check-every-file.ts)', () => {
  it('checks the files of a pack together and the large ones streamed, writing nothing; one blob read from the wrong place in its pack is named', async () => {
    const { dir, config } = await storedTree()
    const all = await cli(['verify', '--content', '--json', '--config', config])
    expect(all.code, all.stderr).toBe(0)
    expect(JSON.parse(all.stdout)).toMatchObject({ restorable: true, content: { checked: 42, stored: 42, paths: 42, all: true } })
    expect((await readdir(join(dir, 'state', 'snapshots'))).filter(n => n.startsWith('verify'))).toEqual([])

    // One byte later in the same pack: its blob no longer opens (AES-GCM), the others still do.
    let pack = ''
    await recordAnew(dir, config, 'f-17.txt', (objects) => objects.map(([object, offset, length]) => { pack = object; return [object, offset + 1, length] }))
    const failed = await cli(['verify', '--content', '--json', '--config', config])
    expect(failed.code).toBe(4)
    const drill = JSON.parse(failed.stdout) as { restorable: boolean, failed: { cid: string, message: string }, content: { checked: number, stored: number } }
    expect(drill.restorable).toBe(false)
    expect(drill.failed.cid).toBe(pack)
    expect(drill.failed.message).toContain('the stored file kept/f-17.txt (content ')
    expect(drill.failed.message).toContain(`does not come back from object ${pack}`)
    // Every other content of the walk's window came back: counted, not hidden by the one that failed.
    expect(drill.content).toMatchObject({ checked: 42, stored: 43 })
    expect((await readdir(join(dir, 'state', 'snapshots'))).filter(n => n.startsWith('verify'))).toEqual([])
  }, 120_000)

  it('says which file a damaged store loses, in its JSON too (a pack file cut short on disk)', async () => {
    const { dir, config } = await storedTree()
    const packs = join(dir, 'service', 'packs')
    const [file] = (await readdir(packs)).filter(n => n.endsWith('.pack'))
    if (file === undefined) throw new Error('the embedded service holds no pack file')
    await truncate(join(packs, file), (await stat(join(packs, file))).size - 4096)
    const failed = await cli(['verify', '--content', '--json', '--config', config])
    expect(failed.code).toBe(4)
    const drill = JSON.parse(failed.stdout) as { restorable: boolean, failed: { message: string } | null }
    expect(drill.restorable).toBe(false)
    expect(drill.failed?.message).toMatch(/^the stored file kept\/\S+ \(content \S+\) does not come back from object /)
  }, 120_000)

  it('names a large file whose object the service never held', async () => {
    const { dir, config } = await storedTree()
    const gone = CID.create(1, raw.code, await sha256.digest(randomBytes(32))).toString()
    await recordAnew(dir, config, 'large-b.bin', (objects) => objects.map(([, offset, length]) => [gone, offset, length]))
    const failed = await cli(['verify', '--content', '--config', config])
    expect(failed.code).toBe(4)
    expect(failed.stdout).toMatch(/^NOT restorable: /)
    expect(failed.stderr).toContain('the stored file kept/large-b.bin (content ')
    expect(failed.stderr).toContain(`does not come back from object ${gone}`)
  }, 120_000)
})
