import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { link, mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, contentObjects, ok } from '../cli/content-devices.js'

type Line = { type: string, path?: string, outcome?: string, reason?: string }
const parse = (s: string): Line[] => s.trim().split('\n').filter(l => l.startsWith('{')).map(l => JSON.parse(l) as Line)

describe.skipIf(EXTERNAL)('recheck: a hard-link group whose content cannot be fetched', () => {
  it('fetches the damaged content once, not once per name of the group', async () => {
    const N = Number(process.env.RECHECK_N ?? '12')
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const a = await contentDevice(root, service, 'a')
    for (let i = 0; i < N; i++) await mkdir(join(a.folder, `d${i}`))
    await writeFile(join(a.folder, 'd0', 'h'), randomBytes(300_000))
    for (let i = 1; i < N; i++) await link(join(a.folder, 'd0', 'h'), join(a.folder, `d${i}`, 'h'))
    await ok(a, ['snapshot'])
    const objects = [...contentObjects(a)]
    console.log('OBJECTS', objects)
    service.local.faults.set('gateway', process.env.RECHECK_500 === '1' ? { errorRate: 1, status: 503 } : { bitflip: true })
    const local = service.local
    const before = local.requestLog().length
    const started = Date.now()
    const r = await a.run(['restore', '--files', '--to', join(root, 'out'), '--json'])
    const took = Date.now() - started
    const asked = local.requestLog().slice(before).filter(q => !/pointer|manifest/.test(q.route))
    const hist: Record<string, number> = {}
    for (const q of asked) hist[`${q.route} ${q.status}`] = (hist[`${q.route} ${q.status}`] ?? 0) + 1
    const outcomes = parse(r.stdout).filter(l => l.type === 'file').map(l => `${l.path} ${l.outcome} ${(l.reason ?? '').slice(0, 300)}`)
    console.log('CODE', r.code, 'took ms', took, 'object requests', asked.length, JSON.stringify(hist))
    console.log(outcomes.join('\n'))
    console.log('STDERR', r.stderr.slice(0, 1500))
    expect(r.code).not.toBe(0)
    expect(asked.length).toBeLessThan(2 * N)
    // One name's fetch, with its retries (5 with a 503), not one per name.
    expect(asked.length).toBeLessThanOrEqual(6)
  }, 240_000)
})
