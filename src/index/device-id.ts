import { readFileSync } from 'node:fs'
import { randomUUID } from 'node:crypto'
import { join } from 'node:path'
import { writeFileAtomicSync } from '../util/atomic-write.js'

export const DEVICE_ID_FILE = 'device-id'

/**
 * This device's id: random, made once, kept in the state dir beside (not inside) the index so
 * that a restored index keeps the device's identity.
 */
export function loadOrCreateDeviceId (stateDir: string): string {
  const path = join(stateDir, DEVICE_ID_FILE)
  try {
    const id = readFileSync(path, 'utf8').trim()
    if (/^[0-9a-f-]{36}$/.test(id)) return id
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
  const id = randomUUID()
  writeFileAtomicSync(path, `${id}\n`, { mode: 0o600 })
  return id
}

/** The device id if one was made, without making one (read-only commands). */
export function readDeviceId (stateDir: string): string | undefined {
  try {
    return readFileSync(join(stateDir, DEVICE_ID_FILE), 'utf8').trim()
  } catch {
    return undefined
  }
}
