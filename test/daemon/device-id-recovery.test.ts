import { describe, it, expect } from 'vitest'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { indexPath, openIndex } from '../../src/index/index.js'
import { startInProcessDaemon, statusOf } from '../helpers/in-process-daemon.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'

describe('a damaged device-id file at start', () => {
  it('keeps the identity (no ghost device), and status says what was put right', async () => {
    const dir = await useTempDir()
    const first = await startInProcessDaemon(dir)
    const id = (await statusOf(first.port)).device.id
    await writeFile(join(first.notes, 'a.md'), 'a')
    await until(async () => {
      const index = openIndex(indexPath(join(dir, 'state')), { readonly: true })
      try { return index.entries.liveCount(id) > 0 ? true : undefined } finally { index.close() }
    }, 20_000, 'a.md to be indexed')
    await first.daemon.stop()
    await writeFile(join(dir, 'state', 'device-id'), `${id.slice(0, 10)}\u0000\u0000`)

    const second = await startInProcessDaemon(dir)
    const status = await statusOf(second.port)
    expect(status.device.id).toBe(id)
    expect((await readFile(join(dir, 'state', 'device-id'), 'utf8')).trim()).toBe(id)
    expect(status.stateFiles.recovered).toEqual([expect.objectContaining({ file: join(dir, 'state', 'device-id'), problem: expect.stringMatching(/does not hold a device id/) as unknown, action: expect.stringMatching(new RegExp(`kept this device's id ${id}`)) as unknown })])
    await second.daemon.stop()
    const index = openIndex(indexPath(join(dir, 'state')), { readonly: true })
    try {
      expect(index.entries.devices().filter(d => d.lastSeq > 0).map(d => d.id)).toEqual([id])
    } finally {
      index.close()
    }
  })
})
