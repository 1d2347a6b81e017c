import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { link, mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok } from './content-devices.js'

type Line = { type: string, path?: string, outcome?: string, reason?: string }
const parse = (s: string): Line[] => s.trim().split('\n').filter(l => l.startsWith('{')).map(l => JSON.parse(l) as Line)

describe.skipIf(EXTERNAL)('a hard-link group whose content cannot be fetched', () => {
  it('fetches the damaged content once, not once per name of the group', async () => {
    const N = 12
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const a = await contentDevice(root, service, 'a')
    for (let i = 0; i < N; i++) await mkdir(join(a.folder, `d${i}`))
    await writeFile(join(a.folder, 'd0', 'h'), randomBytes(300_000))
    for (let i = 1; i < N; i++) await link(join(a.folder, 'd0', 'h'), join(a.folder, `d${i}`, 'h'))
    await ok(a, ['snapshot'])
    service.local.faults.set('gateway', { bitflip: true })
    const local = service.local
    const before = local.requestLog().length
    const r = await a.run(['restore', '--files', '--to', join(root, 'out'), '--json'])
    const asked = local.requestLog().slice(before).filter(q => !/pointer|manifest/.test(q.route))
    // Every name is said, none written: the first failed on its content, the others with it.
    const outcomes = parse(r.stdout).filter(l => l.type === 'file')
    expect(outcomes.length).toBe(N)
    expect(outcomes.every(l => l.outcome === 'failed')).toBe(true)
    expect(r.code).not.toBe(0)
    // One name's fetch, with its retries, not one per name.
    expect(asked.length).toBeLessThanOrEqual(6)
  }, 240_000)
})
