import { describe, expect, it } from 'vitest'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { ok, shareKey, writeSomeFiles, type ContentDevice } from '../cli/content-devices.js'
import { exitDevice, FIRST, freshService, historyOf, pointerOf, publishedAt, readCar, SECOND, type Service } from './exit-devices.js'

/** Device a on its own service, published twice: the whole CAR, and one `--at` the first publish. */
async function twoPublishes (root: string): Promise<{ one: Service, a: ContentDevice, newCar: string, oldCar: string, history: Array<{ cid: string }> }> {
  const one = await freshService(root, 'one')
  const a = await exitDevice(root, one, 'a')
  await writeSomeFiles(a.folder, 'first', { largeBytes: 1024 * 1024 + 3, small: 5 })
  await ok(a, ['snapshot'], publishedAt(FIRST))
  const between = new Date(Date.parse(FIRST) + 30 * 60_000).toISOString()
  await writeSomeFiles(a.folder, 'second', { largeBytes: 1024 * 1024 + 9, small: 5 })
  await ok(a, ['snapshot'], publishedAt(SECOND))
  const newCar = join(root, 'new.car')
  const oldCar = join(root, 'old.car')
  await ok(a, ['export', '--car', newCar])
  await ok(a, ['export', '--car', oldCar, '--at', between])
  return { one, a, newCar, oldCar, history: await historyOf(a) }
}

describe.skipIf(EXTERNAL)('import --car refuses what it must not take', () => {
  it('a CAR with a block that does not match its CID: refused before anything is sent, the block named (exit 4), the pointer untouched', async () => {
    const root = await useTempDir()
    const { a, newCar } = await twoPublishes(root)
    const two = await freshService(root, 'two')
    const c = await exitDevice(root, two, 'c')
    await shareKey(a, c)
    const bytes = await readFile(newCar)
    const { blocks } = await readCar(newCar)
    const [victim, block] = [...blocks].find(([, b]) => b.byteLength > 1000) as [string, Uint8Array]
    const at = bytes.indexOf(Buffer.from(block))
    expect(at).toBeGreaterThan(0)
    bytes[at + 500] = (bytes[at + 500] as number) ^ 0x40
    const forged = join(root, 'forged.car')
    await writeFile(forged, bytes)
    const refused = await c.run(['import', '--car', forged])
    expect(refused.code, refused.stderr).toBe(4)
    expect(refused.stderr).toContain(`block ${victim}`)
    expect(refused.stderr).toContain('[ERR_CAR_BLOCK_MISMATCH]')
    expect(two.local.requestLog().filter(r => r.route === 'dag_import')).toEqual([])
    expect(await pointerOf(c)).toBe(null)
  }, 300_000)

  it('a CAR of another key\'s objects: put on the service but refused, named (exit 4), the pointer left on this device\'s own publish', async () => {
    const root = await useTempDir()
    const { newCar, history } = await twoPublishes(root)
    const two = await freshService(root, 'two')
    const d = await exitDevice(root, two, 'd')
    await writeSomeFiles(d.folder, 'mine', { largeBytes: 10, small: 2 })
    await ok(d, ['snapshot'])
    const own = await pointerOf(d)
    const refused = await d.run(['import', '--car', newCar])
    expect(refused.code, refused.stderr).toBe(4)
    expect(refused.stderr).toContain('[ERR_IMPORT_REFUSED]')
    expect(refused.stderr).toContain(history[0]?.cid)
    expect(refused.stderr).toContain('another key')
    expect(await pointerOf(d)).toBe(own)
  }, 300_000)

  it('an older chain over a newer pointer: refused (ERR_IMPORT_OLDER, exit 1) unless --force', async () => {
    const root = await useTempDir()
    const { a, newCar, oldCar, history } = await twoPublishes(root)
    const two = await freshService(root, 'two')
    const c = await exitDevice(root, two, 'c')
    await shareKey(a, c)
    await ok(c, ['import', '--car', newCar])
    const refused = await c.run(['import', '--car', oldCar])
    expect(refused.code, refused.stderr).toBe(1)
    expect(refused.stderr).toContain('[ERR_IMPORT_OLDER]')
    expect(refused.stderr).toContain('older publish')
    expect(refused.stderr).toContain('--force')
    expect(await pointerOf(c)).toBe(history[0]?.cid)
    await ok(c, ['import', '--car', oldCar, '--force'])
    expect(await pointerOf(c)).toBe(history[1]?.cid)
    // The newer one moves it forward again without --force: its chain holds the pointer's publish.
    await ok(c, ['import', '--car', newCar])
    expect(await pointerOf(c)).toBe(history[0]?.cid)
  }, 300_000)
})
