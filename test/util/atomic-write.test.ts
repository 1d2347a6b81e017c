import { describe, expect, it, onTestFinished, vi } from 'vitest'
import fs, { readdirSync, readFileSync, readlinkSync, realpathSync, statSync, writeFileSync } from 'node:fs'
import { syncBuiltinESMExports } from 'node:module'
import { join } from 'node:path'
import { writeFileAtomicSync } from '../../src/util/atomic-write.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { canNameDescriptors } from '../helpers/sync-probe.js'

/** node's own fs calls, watched (each still runs) or made to fail, until the test ends. */
function watchFs (): { events: string[], failWrites: () => void } {
  const events: string[] = []
  const { fsyncSync, renameSync, writeSync } = fs
  let failing = false
  const spies = [
    vi.spyOn(fs, 'fsyncSync').mockImplementation((fd) => { events.push(`fsync ${readlinkSync(`/proc/self/fd/${fd}`)}`); fsyncSync(fd) }),
    vi.spyOn(fs, 'renameSync').mockImplementation((from, to) => { events.push(`rename ${String(from)} ${String(to)}`); renameSync(from, to) }),
    vi.spyOn(fs, 'writeSync').mockImplementation(((...args: Parameters<typeof writeSync>) => {
      if (failing) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' })
      return writeSync(...args)
    }) as typeof writeSync)
  ]
  syncBuiltinESMExports()
  onTestFinished(() => {
    for (const spy of spies) spy.mockRestore()
    syncBuiltinESMExports()
  })
  return { events, failWrites: () => { failing = true } }
}

describe('a file written atomically', () => {
  it.runIf(canNameDescriptors())('is fsynced under a temp name beside it, renamed over the old one, then its directory fsynced', async () => {
    const dir = realpathSync(await useTempDir())
    const path = join(dir, 'device-id')
    writeFileSync(path, 'old\n')
    const { events } = watchFs()
    writeFileAtomicSync(path, 'new\n', { mode: 0o600 })
    expect(events).toHaveLength(3)
    const temp = /^fsync (.+)$/.exec(events[0] ?? '')?.[1] ?? ''
    expect(temp.startsWith(join(dir, '.device-id.'))).toBe(true)
    expect(events).toEqual([`fsync ${temp}`, `rename ${temp} ${path}`, `fsync ${dir}`])
    expect(readFileSync(path, 'utf8')).toBe('new\n')
    expect(statSync(path).mode & 0o777).toBe(0o600)
    expect(readdirSync(dir)).toEqual(['device-id'])
  })

  it.runIf(canNameDescriptors())('leaves the old file whole, and no temp, when the disk refuses the write', async () => {
    const dir = realpathSync(await useTempDir())
    const path = join(dir, 'daemon.json')
    writeFileSync(path, '{"pid":1}\n')
    const { failWrites } = watchFs()
    failWrites()
    expect(() => writeFileAtomicSync(path, '{"pid":2}\n')).toThrow(/ENOSPC/)
    expect(readFileSync(path, 'utf8')).toBe('{"pid":1}\n')
    expect(readdirSync(dir)).toEqual(['daemon.json'])
  })
})
