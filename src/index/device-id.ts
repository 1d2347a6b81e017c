import { existsSync, readFileSync, renameSync } from 'node:fs'
import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { DeviceIdDamagedError } from '../errors.js'
import { writeFileAtomicSync } from '../util/atomic-write.js'
import { openDatabase } from './open.js'
import { STATE_NAMES } from '../config/state-layout.js'

export const DEVICE_ID_FILE = STATE_NAMES.deviceId
const ID = /^[0-9a-f-]{36}$/
const ID_INSIDE = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g

/** A damaged `device-id` put right: what was wrong and what was done, for the log and status. */
export interface DeviceIdRecovery { readonly file: string, readonly problem: string, readonly action: string }

/**
 * This device's id: random, made once, kept in the state dir beside (not inside) the index so
 * that a restored index keeps the device's identity. A `device-id` file that is there but does not
 * hold an id is never silently replaced (its rows would stay behind as a ghost device): the id is
 * taken back from the index (the one device there named in the damaged file, or the only one with
 * this host's name), the damaged file kept beside it and `onRecovered` told; when the index cannot
 * say (gone, or holding no device's rows), a {@link DeviceIdDamagedError}: the device may have
 * published under the old id. So does a file that cannot be read. Only a state dir with no file
 * gets a new id.
 */
export function loadOrCreateDeviceId (stateDir: string, onRecovered?: (recovery: DeviceIdRecovery) => void): string {
  const path = join(stateDir, DEVICE_ID_FILE)
  let text: string | undefined
  try {
    text = readFileSync(path, 'utf8')
    const id = text.trim()
    if (ID.test(id)) return id
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code !== 'ENOENT') {
      throw new DeviceIdDamagedError(`${path} cannot be read (${code ?? (err as Error).message}): make it readable by the user cidsync runs as; ` +
        'a new id would make this device another one', { cause: err })
    }
  }
  if (text === undefined) {
    const id = randomUUID()
    writeFileAtomicSync(path, `${id}\n`, { mode: 0o600 })
    return id
  }
  return recover(stateDir, path, text, onRecovered)
}

function recover (stateDir: string, path: string, damaged: string, onRecovered?: (recovery: DeviceIdRecovery) => void): string {
  const devices = knownDevices(stateDir).filter(d => d.lastSeq > 0)
  const named = new Set(damaged.match(ID_INSIDE) ?? [])
  const inFile = devices.filter(d => named.has(d.id))
  const here = devices.filter(d => d.hostname === hostname())
  const found = inFile.length === 1 ? inFile[0] : inFile.length === 0 && here.length === 1 ? here[0] : undefined
  const problem = `${path} does not hold a device id (${damaged.length} bytes: damaged)`
  if (found === undefined && devices.length > 0) {
    throw new DeviceIdDamagedError(`${problem}, and the index cannot tell which of its ${devices.length} devices is this one ` +
      `(${devices.slice(0, 5).map(d => `${d.id} on ${d.hostname ?? '?'}`).join(', ')}${devices.length > 5 ? ', …' : ''}): ` +
      `write this device's id into ${path} (\`cidsync ls --all-devices\` shows whose files are whose); a new id would leave this device's files behind as another device's`)
  }
  // No index to ask: this device may have published under the id the file held, so a new one would fork it.
  if (found === undefined) {
    throw new DeviceIdDamagedError(`${problem}, and the index holds no device's rows to tell which device this is: ` +
      `write this device's id into ${path}. Another device's \`cidsync ls --all-devices\` lists every device with its host name. ` +
      `If this device never published, remove ${path} to start it as a new device`)
  }
  const id = found.id
  const kept = `${path}.damaged-${new Date().toISOString().replace(/[:.]/g, '-')}`
  renameSync(path, kept)
  writeFileAtomicSync(path, `${id}\n`, { mode: 0o600 })
  onRecovered?.({
    file: path,
    problem,
    action: `kept this device's id ${id}, taken from the index (${inFile.length === 1 ? 'named in the damaged file' : `the only device on ${hostname()}`}); the damaged file is kept as ${kept}`
  })
  return id
}

function knownDevices (stateDir: string): Array<{ id: string, hostname: string | null, lastSeq: number }> {
  const index = join(stateDir, STATE_NAMES.index)
  if (!existsSync(index)) return []
  try {
    const db = openDatabase(index, { readonly: true, check: false })
    try {
      return db.prepare('SELECT device_id AS id, hostname, last_seq AS lastSeq FROM devices ORDER BY device_id').all() as Array<{ id: string, hostname: string | null, lastSeq: number }>
    } finally {
      db.close()
    }
  } catch (err) {
    throw new DeviceIdDamagedError(`${join(stateDir, DEVICE_ID_FILE)} does not hold a device id and the index cannot be read to find it (${(err as Error).message}): write this device's id back into the file`, { cause: err })
  }
}

/** The device id if one was made, without making one (read-only commands). */
export function readDeviceId (stateDir: string): string | undefined {
  try {
    return readFileSync(join(stateDir, DEVICE_ID_FILE), 'utf8').trim()
  } catch {
    return undefined
  }
}
