import { describe, expect, it } from 'vitest'
import { readFile, readdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { ok, runAndKill, shareKey, tree, writeSomeFiles } from '../cli/content-devices.js'
import { exitDevice, freshService, historyOf, pointerOf } from './exit-devices.js'

const EXPORT_MOMENTS = ['export:object', 'export:before-rename']
const IMPORT_MOMENTS = ['import:scanned', 'import:uploaded', 'import:checked', 'import:dealt', 'import:pointer-moved']

describe.skipIf(EXTERNAL)('export and import killed with SIGKILL (processes), then run again', () => {
  it('an export killed at each named moment and mid-stream leaves FILE as it was; run again, it writes the same CAR; an import killed at each named moment and mid-upload finishes when run again', async () => {
    const root = await useTempDir()
    const one = await freshService(root, 'one')
    const a = await exitDevice(root, one, 'a')
    await writeSomeFiles(a.folder, 'first', { largeBytes: 4 * 1024 * 1024 + 1, small: 40 })
    await ok(a, ['snapshot'])
    await writeSomeFiles(a.folder, 'second', { largeBytes: 2 * 1024 * 1024 + 1, small: 10 })
    await ok(a, ['snapshot'])
    const history = await historyOf(a)

    const reference = join(root, 'reference.car')
    await ok(a, ['export', '--car', reference, '--content'])
    const want = await readFile(reference)

    const car = join(root, 'export.car')
    await writeFile(car, 'the CAR of an earlier export')
    const killed = async (): Promise<void> => {
      expect(await readFile(car, 'utf8'), 'FILE after a killed export').toBe('the CAR of an earlier export')
    }
    for (const moment of EXPORT_MOMENTS) {
      const run = await a.run(['export', '--car', car, '--content'], { CIDSYNC_FAILPOINT: moment })
      expect(run.signal, `${moment}: ${run.stderr}`).toBe('SIGKILL')
      await killed()
    }
    const gateway = (): number => one.local.requestLog().filter(r => r.route === 'gateway').length
    const before = gateway()
    const mid = await runAndKill(a, ['export', '--car', car, '--content'], () => gateway() > before + 5, 20)
    if (mid.killed) await killed()
    await ok(a, ['export', '--car', car, '--content'])
    expect((await readFile(car)).equals(want), 'the CAR after the rerun is the reference one, byte for byte').toBe(true)
    expect((await readdir(root)).filter(n => n.includes('cidsync-export')), 'temp files left beside FILE').toEqual([])

    for (const moment of [...IMPORT_MOMENTS, 'mid-upload']) {
      const name = moment.replace(/[^a-z]/g, '-')
      const service = await freshService(root, `to-${name}`)
      const c = await exitDevice(root, service, `c-${name}`)
      await shareKey(a, c)
      if (moment === 'mid-upload') {
        // The upload held in flight (its answer delayed), and the process killed while it is: once
        // the service has taken the fault (the upload arrived), not at a fixed moment, which a slow
        // machine reaches before the import gets to its upload.
        service.local.faults.set('dag_import', { latencyMs: 10_000, times: 1 })
        const cut = await runAndKill(c, ['import', '--car', reference], () => !service.local.faults.has('dag_import'), 0)
        expect(cut.killed, cut.stderr).toBe(true)
        expect(service.local.faults.has('dag_import'), 'the upload reached the service before the kill').toBe(false)
        expect(await pointerOf(c)).toBe(null)
      } else {
        const run = await c.run(['import', '--car', reference], { CIDSYNC_FAILPOINT: moment })
        expect(run.signal, `${moment}: ${run.stderr}`).toBe('SIGKILL')
        if (moment !== 'import:pointer-moved') expect(await pointerOf(c), `pointer after a kill at ${moment}`).toBe(null)
      }
      await ok(c, ['import', '--car', reference])
      expect(await pointerOf(c), moment).toBe(history[0]?.cid)
      if (moment === 'import:uploaded') {
        await ok(c, ['restore'])
        const back = join(root, `back-${name}`)
        await ok(c, ['restore', '--files', '--to', back])
        expect(await tree(join(back, 'notes'))).toEqual(await tree(a.folder))
      }
    }
  }, 900_000)
})
