import { describe, expect, it } from 'vitest'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok, shareKey, writeSomeFiles } from './content-devices.js'
import { historyOf, pointerOf } from '../exits/exit-devices.js'

/**
 * Two namespaces of one user: one key, one service. Every way a publish of `beta` could be read
 * or installed as `alpha`'s is refused, named, and leaves alpha's pointer as it was.
 */
describe.skipIf(EXTERNAL)('a publish of another namespace, by any way in', () => {
  it('pointer put (with or without --engine), import --car and reads --from a directory whose pointer was forged refuse it', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const alpha = await contentDevice(root, service, 'alpha')
    const beta = await contentDevice(root, service, 'beta')
    await writeFile(beta.config, (await readFile(beta.config, 'utf8')).replace('namespace = "content-faults"', 'namespace = "beta"'))
    await shareKey(alpha, beta)
    await writeSomeFiles(alpha.folder, 'a', { largeBytes: 10_000, small: 2 })
    await writeSomeFiles(beta.folder, 'b', { largeBytes: 10_000, small: 2 })
    await ok(alpha, ['snapshot'])
    await ok(beta, ['snapshot'])
    const [ours] = await historyOf(alpha)
    const [theirs] = await historyOf(beta)
    const pointer = await pointerOf(alpha)
    expect(pointer).toBe(ours?.cid)

    // By hand: refused, whether or not an engine is named. Only --force puts it.
    for (const extra of [[], ['--engine', 'cidsync-sqlite/2']]) {
      const put = await alpha.run(['pointer', 'put', theirs?.cid ?? '', ...extra])
      expect(put.code, `${extra.join(' ')}: ${put.stdout} ${put.stderr}`).toBe(2)
      expect(put.stderr).toContain('was published for namespace beta')
      expect(await pointerOf(alpha)).toBe(pointer)
    }

    // A CAR of beta's history imported into alpha.
    const car = join(root, 'beta.car')
    await ok(beta, ['export', '--car', car])
    const imported = await alpha.run(['import', '--car', car])
    expect(imported.code, imported.stderr).not.toBe(0)
    expect(imported.stderr).toContain('ERR_IMPORT_REFUSED')
    expect(await pointerOf(alpha)).toBe(pointer)

    // A directory store of beta, its pointers file forged to name beta's publish for alpha.
    const usb = join(root, 'usb')
    await ok(beta, ['export', '--dir', usb])
    const pointers = JSON.parse(await readFile(join(usb, 'pointers.json'), 'utf8')) as Record<string, { namespace: string }>
    const [entry] = Object.values(pointers)
    const forged = { ...entry, namespace: 'content-faults' } as { namespace: string, network: string }
    await writeFile(join(usb, 'pointers.json'), JSON.stringify({ [JSON.stringify([forged.namespace, forged.network])]: forged }))
    for (const args of [['history', '--from', usb], ['restore', '--from', usb, '--force'], ['find', 'small', '--at', new Date().toISOString(), '--from', usb]]) {
      const read = await alpha.run(args)
      expect(read.code, `${args.join(' ')}: ${read.stdout} ${read.stderr}`).not.toBe(0)
      expect(read.stderr, args.join(' ')).toContain('ERR_MANIFEST_NAMESPACE')
    }
    expect(await pointerOf(alpha)).toBe(pointer)
  }, 300_000)
})
