import { describe, expect, it } from 'vitest'
import { join } from 'node:path'
import type { FaultInput } from '../../src/local-service/index.js'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok, shareKey, tree, writeSomeFiles } from './content-devices.js'

/** Each fault hits the first uploads of a run, more than once in a row, then the service recovers. */
const FAULTS: Record<string, FaultInput> = {
  '5xx': { errorRate: 1, status: 503, times: 3 },
  '429 with Retry-After': { errorRate: 1, status: 429, retryAfterSeconds: 1, times: 3 },
  'connection reset before an answer': { resetRate: 1, times: 3 },
  'answer lost after the upload was stored': { resetAfterRate: 1, times: 2 },
  'a slow service': { latencyMs: 1500, times: 4 }
}

describe.skipIf(EXTERNAL)('faults of the service during content uploads (processes)', () => {
  it('5xx, 429, resets, lost answers and a slow service: every snapshot ends with every file stored, and every byte comes back', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const a = await contentDevice(root, service, 'a')
    const b = await contentDevice(root, service, 'b')
    await shareKey(a, b)
    let round = 0
    for (const [name, fault] of Object.entries(FAULTS)) {
      await writeSomeFiles(a.folder, `round-${round++}`, { largeBytes: 4 * 1024 * 1024 + round, small: 50 })
      const failedBefore = service.local.requestLog().filter(r => r.route === 'upload' && r.status !== 200).length
      service.local.faults.set('upload', fault)
      const stored = await a.run(['snapshot'])
      service.local.faults.clear()
      expect(stored.code, `${name}: ${stored.stderr}`).toBe(0)
      expect(stored.stderr, name).toContain('stored 51 files')
      expect(stored.stderr, name).not.toContain('not stored')
      if (fault.errorRate === 1) expect(service.local.requestLog().filter(r => r.route === 'upload' && r.status !== 200).length, name).toBeGreaterThan(failedBefore)
    }
    await ok(b, ['restore'])
    const to = join(root, 'back')
    await ok(b, ['restore', '--files', '--to', to])
    expect(await tree(join(to, 'notes'))).toEqual(await tree(a.folder))
  }, 600_000)
})
