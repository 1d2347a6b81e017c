import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { mkdir, readdir, readFile, utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { sha256 } from 'multiformats/hashes/sha2'
import { openIndex } from '../../src/index/index.js'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

async function cli (args: string[]): Promise<{ code: number | null, stdout: string, stderr: string }> {
  return await runCli(args, { timeoutMs: 120_000 })
}

describe('the restore drill brings stored files back', () => {
  it('verify fetches a sample of stored files, --content all of them, nothing left behind; a stored file that does not come back makes the drill not restorable, naming the file and the object', async () => {
    const { dir, kept, config } = await drillDevice()
    for (let i = 0; i < 12; i++) await writeFile(join(kept, `f-${String(i).padStart(2, '0')}.txt`), randomBytes(200 + i))
    await writeFile(join(kept, 'large.bin'), randomBytes(2 * 1024 * 1024 + 5))
    // One content at two paths: the drill counts contents, restore --files paths; both are said.
    await writeFile(join(kept, 'copy-of-00.txt'), await readFile(join(kept, 'f-00.txt')))
    const stored = await cli(['snapshot', '--config', config])
    expect(stored.code, stored.stderr).toBe(0)
    expect(stored.stderr).toContain('stored 13 files')

    const sample = await cli(['verify', '--config', config])
    expect(sample.code, sample.stderr).toBe(0)
    expect(sample.stdout).toMatch(/^restorable: \S+; 1 publish, \d+ segments? fetched and checked; 8 of 13 stored contents \(14 paths\) brought back and verified \(a sample: --content for all\);/)
    const all = await cli(['verify', '--content', '--full', '--config', config])
    expect(all.code, all.stderr).toBe(0)
    expect(all.stdout).toContain('13 of 13 stored contents (14 paths) brought back and verified;')
    const json = JSON.parse((await cli(['verify', '--content', '--json', '--config', config])).stdout) as { restorable: boolean, content: unknown }
    expect(json).toMatchObject({ restorable: true, content: { checked: 13, stored: 13, paths: 14, all: true } })
    // A mirror's drill takes a sample too, and says so as the primary's does.
    const usb = join(dir, 'usb')
    expect((await cli(['export', '--dir', usb, '--content', '--config', config])).code).toBe(0)
    await writeFile(config, `${await readFile(config, 'utf8')}[[mirrors]]\nname = "usb"\npath = "${usb}"\n`)
    const mirrored = await cli(['verify', '--mirror', 'usb', '--config', config])
    expect(mirrored.code, mirrored.stderr).toBe(0)
    expect(mirrored.stdout).toContain('8 of 13 stored contents (14 paths) brought back and verified (a sample: --content for all)')
    const mirroredAll = await cli(['verify', '--mirror', 'usb', '--content', '--config', config])
    expect(mirroredAll.stdout).toMatch(/13 of 13 stored contents \(14 paths\) brought back and verified\n/)
    // Nothing fetched is left in the state dir.
    expect((await readdir(join(dir, 'state', 'snapshots'))).filter(n => n.startsWith('verify'))).toEqual([])

    // A record naming an object the service never held (recorded anew, so the next publish carries it).
    const gone = CID.create(1, raw.code, await sha256.digest(randomBytes(32))).toString()
    // Two files so: the drill walks on past the first, and names both.
    const index = openIndex(join(dir, 'state', 'index.sqlite'))
    try {
      for (const name of ['f-03.txt', 'f-07.txt']) {
        const [row] = index.content.lookup(index.entries.get(readId(index), 'kept', name)?.cid ?? '')
        if (row === undefined) throw new Error(`no record of kept/${name}`)
        const objects = (JSON.parse(row.objects) as Array<[string, number, number]>).map(([, offset, length]) => [gone, offset, length])
        index.content.record(row.deviceId, 'test', [{ cid: row.cid, size: row.size, sealing: row.sealing, keyId: row.keyId, keySalt: row.keySalt, objects: JSON.stringify(objects) }])
      }
    } finally {
      index.close()
    }
    await writeFile(join(kept, 'new.txt'), 'a change, so that a publish goes out')
    expect((await cli(['snapshot', '--config', config])).code).toBe(0)
    const failed = await cli(['verify', '--content', '--config', config])
    expect(failed.code).toBe(4)
    expect(failed.stdout).toMatch(/^NOT restorable: /)
    expect(failed.stderr).toMatch(/the stored file kept\/f-0[37]\.txt \(content /)
    expect(failed.stderr).toContain(`does not come back from object ${gone}`)
    expect(failed.stderr).toContain(`cidsync deal status ${gone}`)
    expect(failed.stderr).toMatch(/In all, the drill found 2 stored files in 1 object that would not come back through the gateways. A damaged object fails every file it holds there; they are: "kept\/f-0[37]\.txt", "kept\/f-0[37]\.txt"/)
    const failedJson = JSON.parse((await cli(['verify', '--content', '--json', '--config', config])).stdout) as { content: { failedFiles: { files: Array<{ file: string }>, count: number, objects: number, more: boolean } } }
    expect(failedJson.content.failedFiles).toMatchObject({ count: 2, objects: 1, more: false })
    expect(failedJson.content.failedFiles.files.map(f => f.file).sort()).toEqual(['kept/f-03.txt', 'kept/f-07.txt'])
    // Recorded like any drill failure: status says so with no daemon running.
    const offline = await cli(['status', '--config', config])
    expect(offline.stdout).toMatch(new RegExp(`restorable: NO \\(drill at .*\\): ${gone}: the stored file kept/f-0[37]\\.txt`))
    expect((await readdir(join(dir, 'state', 'snapshots'))).filter(n => n.startsWith('verify'))).toEqual([])
  }, 240_000)

  it('what a drill killed midway left (the index it rebuilt, the files it brought back) is removed by a drill a day later', async () => {
    const { dir, kept, config } = await drillDevice()
    for (let i = 0; i < 3; i++) await writeFile(join(kept, `f-${i}.txt`), randomBytes(300 + i))
    expect((await cli(['snapshot', '--config', config])).code).toBe(0)
    const snapshots = join(dir, 'state', 'snapshots')
    const drillFiles = async (): Promise<string[]> => (await readdir(snapshots)).filter(n => n.startsWith('verify')).sort()
    // Killed once it holds the index it rebuilt and the directory it brings files back into.
    const killed = await runCli(['verify', '--content', '--config', config], { timeoutMs: 120_000, env: { ...process.env, CIDSYNC_FAILPOINT: 'verify:content' } })
    expect(killed.signal).toBe('SIGKILL')
    const left = await drillFiles()
    expect(left.some(n => /^verify-\d+\.sqlite$/.test(n)), left.join(', ')).toBe(true)
    expect(left.some(n => /^verify-content-\d+$/.test(n)), left.join(', ')).toBe(true)
    // Kept while fresh: from another PID namespace, a running drill looks gone.
    const early = await cli(['verify', '--config', config])
    expect(early.code, early.stderr).toBe(0)
    expect(await drillFiles()).toEqual(left)
    const dayAndHour = new Date(Date.now() - 25 * 60 * 60_000)
    for (const name of left) await utimes(join(snapshots, name), dayAndHour, dayAndHour)
    const again = await cli(['verify', '--content', '--config', config])
    expect(again.code, again.stderr).toBe(0)
    expect(await drillFiles()).toEqual([])
  }, 240_000)
})

/** A device whose folder `kept` stores its content, on an embedded service of its own, in a temp dir. */
async function drillDevice (): Promise<{ dir: string, kept: string, config: string }> {
  const dir = await useTempDir()
  const kept = join(dir, 'kept')
  await mkdir(kept)
  const config = join(dir, 'config.toml')
  await writeFile(config, `state_dir = "state"\nnamespace = "drill"\n[[folders]]\nname = "kept"\npath = "kept"\nstore = true\n` +
    `[service]\ndir = "${join(dir, 'service')}"\n[snapshot]\ndeal = false\n[status]\nlisten = "127.0.0.1:0"\n`)
  return { dir, kept, config }
}

function readId (index: ReturnType<typeof openIndex>): string {
  const devices = index.entries.devices()
  if (devices.length !== 1) throw new Error(`expected one device, found ${devices.length}`)
  return (devices[0] as { id: string }).id
}
