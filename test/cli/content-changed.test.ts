import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { open, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { bound } from '../helpers/wait.js'
import { contentDevice, ok, runAndKill, shareKey } from './content-devices.js'

describe.skipIf(EXTERNAL)('a file changed while its content is uploaded (processes)', () => {
  it('is never recorded with bytes its row does not hold, even once it holds its old bytes again', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const a = await contentDevice(root, service, 'a')
    const b = await contentDevice(root, service, 'b')
    await shareKey(a, b)
    const original = randomBytes(10 * 1024 * 1024)
    const path = join(a.folder, 'large.bin')
    await writeFile(path, original)
    // Slow uploads: the file is still being read when its first parts have landed.
    service.local.faults.set('upload', { latencyMs: 400 })
    const uploads = (): number => service.local.requestLog().filter(r => r.route === 'upload' && r.status === 200).length
    const before = uploads()
    const changing = runAndKill(a, ['snapshot'], () => false, 0)
    const deadline = Date.now() + bound(60_000)
    while (uploads() < before + 2 && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 5))
    // Its last MiB rewritten in place, same size, while parts before it are sent.
    const handle = await open(path, 'r+')
    await handle.write(randomBytes(1024 * 1024), 0, 1024 * 1024, original.byteLength - 1024 * 1024)
    await handle.close()
    const first = await changing
    service.local.faults.clear()
    expect(first.killed).toBe(false)

    // Back to the bytes its first row held: stored now, and what is stored is those bytes.
    await writeFile(path, original)
    const second = await ok(a, ['snapshot'])
    expect(second.stderr).not.toContain('not stored')
    await ok(b, ['restore'])
    const to = join(root, 'back')
    const got = await b.run(['get', 'notes/large.bin', '--to', to])
    expect(got.code, got.stderr).toBe(0)
    expect((await readFile(join(to, 'notes', 'large.bin'))).equals(original)).toBe(true)
  }, 300_000)
})
