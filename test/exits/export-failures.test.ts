import { describe, expect, it } from 'vitest'
import { existsSync } from 'node:fs'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { ok, writeSomeFiles } from '../cli/content-devices.js'
import { exitDevice, freshService, historyOf } from './exit-devices.js'

describe.skipIf(EXTERNAL)('export --car never leaves a partial CAR', () => {
  it('an object the service does not give: named, exit 1, no FILE; a gateway whose bytes do not hash to the CID: named, exit 4, no FILE', async () => {
    const root = await useTempDir()
    const one = await freshService(root, 'one')
    const a = await exitDevice(root, one, 'a')
    await writeSomeFiles(a.folder, 'd', { largeBytes: 1024 * 1024 + 1, small: 5 })
    await ok(a, ['snapshot'])
    // The history is read once, so its manifests are cached and the export's next gateway request is for an object's blocks.
    const [head] = await historyOf(a)
    const car = join(root, 'out.car')

    one.local.faults.set('gateway', { errorRate: 1, status: 404, times: 1 })
    const missing = await a.run(['export', '--car', car])
    expect(missing.code, missing.stderr).toBe(1)
    expect(missing.stderr).toContain('[ERR_EXPORT_INCOMPLETE]')
    expect(missing.stderr).toContain(`manifest ${head?.cid ?? '?'}`)
    expect(missing.stderr).toContain('no CAR was written')
    expect(existsSync(car)).toBe(false)

    one.local.faults.set('gateway', { bitflip: true, times: 1 })
    const flipped = await a.run(['export', '--car', car, '--content'])
    expect(flipped.code, flipped.stderr).toBe(4)
    expect(flipped.stderr).toContain(`manifest ${head?.cid ?? '?'}`)
    expect(flipped.stderr).toContain('[ERR_INTEGRITY]')
    expect(existsSync(car)).toBe(false)
    expect((await readdir(root)).filter(n => n.includes('cidsync-export'))).toEqual([])

    // The service well again: the same command writes it.
    await ok(a, ['export', '--car', car, '--content'])
    expect(existsSync(car)).toBe(true)
  }, 300_000)
})
