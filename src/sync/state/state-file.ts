import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { STATE_NAMES } from '../../config/index.js'

/** This device's sync progress (publish jobs, restores), beside the index. */
export const SYNC_STATE_FILE = STATE_NAMES.syncState

/**
 * Whether this state dir ever published or restored: until then its snapshot key has sealed
 * nothing, so replacing it (the key `init` made, with one carried from another device) loses
 * nothing.
 */
export function hasSyncState (stateDir: string): boolean {
  return existsSync(join(stateDir, SYNC_STATE_FILE))
}
