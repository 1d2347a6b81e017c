import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import * as dagPb from '@ipld/dag-pb'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { flipStoredBlock, hideStoredBlock, readStoredBlock } from '../helpers/service-blocks.js'

/** The snapshots' profile: leaves of 256 KiB under one node for a pack of a few MiB. */
const LEAF_BYTES = 256 * 1024

async function cli (args: string[]): Promise<{ code: number | null, stdout: string, stderr: string }> {
  return await runCli(args, { timeoutMs: 120_000 })
}

/** Two devices on one embedded service, 30 small files in one pack stored by the first and indexed by the second. */
async function storedPack (): Promise<{ dir: string, b: string, service: string, files: Map<string, Buffer>, placed: Array<{ path: string, object: [string, number, number] }>, pack: string }> {
  const dir = await useTempDir()
  const notes = join(dir, 'notes')
  await mkdir(notes)
  const service = join(dir, 'service')
  const config = (name: string, folder: string): string =>
    `state_dir = "${name}-state"\nnamespace = "leaf"\n[[folders]]\nname = "notes"\npath = "${folder}"\nstore = true\n` +
    `[service]\ndir = "${service}"\n[snapshot]\ndeal = false\n[status]\nlisten = "127.0.0.1:0"\n`
  await writeFile(join(dir, 'a.toml'), config('a', notes))
  await mkdir(join(dir, 'b-notes'))
  await writeFile(join(dir, 'b.toml'), config('b', join(dir, 'b-notes')))
  const a = join(dir, 'a.toml')
  const b = join(dir, 'b.toml')
  const files = new Map<string, Buffer>()
  for (let i = 0; i < 30; i++) files.set(`doc-${i}.txt`, randomBytes(60_000 + i))
  for (const [name, bytes] of files) await writeFile(join(notes, name), bytes)
  expect((await cli(['snapshot', '--config', a])).code).toBe(0)
  expect((await cli(['key', 'import', (await cli(['key', 'export', '--config', a])).stdout.trim(), '--config', b])).code).toBe(0)
  expect((await cli(['restore', '--config', b])).code).toBe(0)
  // The pack every file was sealed into, and where each file's blob lies in it.
  const db = new Database(join(dir, 'a-state', 'index.sqlite'), { readonly: true })
  const placed = (db.prepare('SELECT e.path, c.objects FROM entries e JOIN content c ON c.cid = e.cid').all() as Array<{ path: string, objects: string }>)
    .map(({ path, objects }) => ({ path, object: JSON.parse(objects)[0] as [string, number, number] }))
  db.close()
  expect(placed).toHaveLength(files.size)
  const pack = (placed[0] as { object: [string, number, number] }).object[0]
  expect(placed.every(p => p.object[0] === pack)).toBe(true)
  return { dir, b, service, files, placed, pack }
}

/**
 * A restore from the embedded service reads a pack's leaves without hashing them: each file's
 * blob is checked by its tags and its plaintext CID. A byte damaged on the disk is then found
 * for the one file whose blob holds it, and that file alone is refused. Damage above the leaves,
 * or a leaf gone, is said as what it is, never as a network failure.
 */
describe('restore --files from an embedded service whose pack is damaged', () => {
  it('refuses the one file whose blob holds it (exit 4, named), and brings back every other, whole', async () => {
    const { dir, b, service, files, placed, pack } = await storedPack()
    // The middle byte of the pack's third leaf, flipped behind the service's back.
    const leaves = dagPb.decode(readStoredBlock(service, pack)).Links
    expect(leaves.length).toBeGreaterThan(3)
    const leaf = (leaves[2] as dagPb.PBLink).Hash
    flipStoredBlock(service, leaf.toString())
    const damagedAt = 2 * LEAF_BYTES + (readStoredBlock(service, leaf.toString()).byteLength >> 1)
    const hit = placed.filter(({ object: [, offset, length] }) => offset <= damagedAt && damagedAt < offset + length).map(p => p.path)
    expect(hit).toHaveLength(1)

    const to = join(dir, 'back')
    const refused = await cli(['restore', '--files', '--to', to, '--config', b])
    expect(refused.code, refused.stderr).toBe(4)
    expect(refused.stderr).toMatch(new RegExp(`notes/${(hit[0] as string).replace('.', '\\.')}: .*damaged or forged.*\\[ERR_CONTENT_INTEGRITY\\]`))
    const back = await readdir(join(to, 'notes'))
    // Every other file whole; no temp of the refused one left.
    expect(back.sort()).toEqual([...files.keys()].filter(name => name !== hit[0]).sort())
    for (const name of back) expect((await readFile(join(to, 'notes', name))).equals(files.get(name) as Buffer), name).toBe(true)
    // `get` of a file or two reads them by range, and judges them alike.
    const got = await cli(['get', `notes/${hit[0] as string}`, '--to', join(dir, 'got'), '--config', b])
    expect(got.code, got.stderr).toBe(4)
    expect(got.stderr).toContain('[ERR_CONTENT_INTEGRITY]')
    const sound = back[0] as string
    expect((await cli(['get', `notes/${sound}`, '--to', join(dir, 'got'), '--config', b])).code).toBe(0)
    expect((await readFile(join(dir, 'got', 'notes', sound))).equals(files.get(sound) as Buffer)).toBe(true)
    // The drills are stricter: each object is hashed whole, as a gateway's answer to another
    // device would be, so the damaged pack fails them whichever of its files they read first.
    for (const drill of [['verify', '--content'], ['verify']]) {
      const said = await cli([...drill, '--config', b])
      expect(said.code, `${drill.join(' ')}: ${said.stdout}${said.stderr}`).toBe(4)
      expect(`${said.stdout}${said.stderr}`).toContain(`does not come back from object ${pack}`)
    }
  }, 240_000)

  it('a damaged node above the leaves: every file of the pack refused as damaged (exit 4, ERR_INTEGRITY), none as a network failure', async () => {
    const { dir, b, service, pack } = await storedPack()
    flipStoredBlock(service, pack)
    const to = join(dir, 'back')
    const refused = await cli(['restore', '--files', '--to', to, '--config', b])
    expect(refused.code, refused.stderr).toBe(4)
    expect(refused.stderr).toMatch(/notes\/doc-0\.txt: .*does not hash to its CID.*\[ERR_INTEGRITY\]/)
    expect(refused.stderr).not.toContain('ERR_GATEWAY_FETCH')
    expect(await readdir(join(to, 'notes')).catch(() => [])).toEqual([])
  }, 240_000)

  it('a leaf gone from the service\'s index: said as the block not held, never as a network failure', async () => {
    const { dir, b, service, pack } = await storedPack()
    const leaf = (dagPb.decode(readStoredBlock(service, pack)).Links[2] as dagPb.PBLink).Hash.toString()
    hideStoredBlock(service, leaf)
    const refused = await cli(['restore', '--files', '--to', join(dir, 'back'), '--config', b])
    expect(refused.code, refused.stderr).not.toBe(0)
    expect(refused.stderr).toContain(`does not hold block ${leaf}`)
    expect(refused.stderr).not.toContain('ERR_GATEWAY_FETCH')
  }, 240_000)
})
