import { describe, it, expect } from 'vitest'
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { indexPath, loadOrCreateDeviceId, openIndex, type DeviceIdRecovery } from '../../src/index/index.js'
import { DeviceIdDamagedError } from '../../src/errors.js'
import { useTempDir } from '../helpers/temp-dir.js'

const A = 'aaaaaaaa-0000-4000-8000-000000000000'
const B = 'bbbbbbbb-0000-4000-8000-000000000000'

function indexWith (stateDir: string, devices: Array<[string, string]>): void {
  const index = openIndex(indexPath(stateDir))
  for (const [id, host] of devices) {
    index.entries.registerDevice(id, host)
    index.entries.apply(id, [{ kind: 'upsert', folder: 'notes', path: `${id}.md`, size: 1, mtimeMs: 1, cid: `cid-${id}`, cidProfile: 'kubo-cidv1' }])
  }
  index.close()
}

describe('a damaged device-id file', () => {
  it('keeps the identity the index holds (this host\'s device), says so, and keeps the damaged file', async () => {
    const dir = await useTempDir()
    indexWith(dir, [[A, hostname()], [B, 'another-host']])
    await writeFile(join(dir, 'device-id'), 'aaaaaaaa-00\u0000\u0000garbage')
    const told: DeviceIdRecovery[] = []
    expect(loadOrCreateDeviceId(dir, r => told.push(r))).toBe(A)
    expect((await readFile(join(dir, 'device-id'), 'utf8')).trim()).toBe(A)
    expect(told).toHaveLength(1)
    expect(told[0]?.problem).toMatch(/does not hold a device id/)
    expect(told[0]?.action).toMatch(new RegExp(`kept this device's id ${A}`))
    expect((await readdir(dir)).some(name => name.startsWith('device-id.damaged-'))).toBe(true)
    // Once put right, nothing more is said.
    expect(loadOrCreateDeviceId(dir, r => told.push(r))).toBe(A)
    expect(told).toHaveLength(1)
  })

  it('takes the id the damaged file still names when the index knows it', async () => {
    const dir = await useTempDir()
    indexWith(dir, [[A, 'elsewhere'], [B, 'another-host']])
    await writeFile(join(dir, 'device-id'), `x${B}x\n`)
    expect(loadOrCreateDeviceId(dir)).toBe(B)
  })

  it('that the index cannot resolve stops with a coded error, never a new identity', async () => {
    const dir = await useTempDir()
    indexWith(dir, [[A, 'one-host'], [B, 'another-host']])
    await writeFile(join(dir, 'device-id'), '')
    let error: unknown
    try { loadOrCreateDeviceId(dir) } catch (err) { error = err }
    expect(error).toBeInstanceOf(DeviceIdDamagedError)
    expect(error).toMatchObject({ code: 'ERR_DEVICE_ID_DAMAGED', exitCode: 2 })
    expect((error as Error).message).toContain(A)
    expect(await readFile(join(dir, 'device-id'), 'utf8')).toBe('')
  })

  it('with the index gone (or holding no rows) stops with a coded error: the device may have published under its id', async () => {
    const dir = await useTempDir()
    await writeFile(join(dir, 'device-id'), `${A.slice(0, 20)}\u0000\u0000`)
    const told: DeviceIdRecovery[] = []
    expect(() => loadOrCreateDeviceId(dir, r => told.push(r))).toThrow(DeviceIdDamagedError)
    expect(() => loadOrCreateDeviceId(dir)).toThrow(/the index holds no device's rows to tell which device this is: write this device's id into .*If this device never published, remove/s)
    indexWith(dir, [])
    expect(() => loadOrCreateDeviceId(dir)).toThrow(DeviceIdDamagedError)
    expect(told).toEqual([])
    expect(await readdir(dir)).not.toContain(expect.stringMatching(/^device-id\.damaged-/))
    // Removed by the user, who knows the device never published: a new id then.
    await rm(join(dir, 'device-id'))
    expect(loadOrCreateDeviceId(dir)).toMatch(/^[0-9a-f-]{36}$/)
  })

  it('that cannot be read stops with a coded error, never a new identity', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'device-id'))
    let error: unknown
    try { loadOrCreateDeviceId(dir) } catch (err) { error = err }
    expect(error).toMatchObject({ code: 'ERR_DEVICE_ID_DAMAGED' })
    expect((error as Error).message).toMatch(/cannot be read \(EISDIR\)/)
  })
})
