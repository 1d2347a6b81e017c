import type { Config } from '../../config/index.js'

/**
 * Whether a snapshot with no cipher may be opened here. A device that encrypts refuses one
 * unless told otherwise (`[snapshot] accept_unencrypted`, or restore's `--allow-unencrypted`):
 * without a cipher nothing proves a device of this user made it, and its rows would be merged
 * and then re-encrypted under the user's key.
 */
export function acceptsUnencrypted (config: Config, allowedByFlag = false): boolean {
  return config.snapshot.encryption === 'none' || config.snapshot.acceptUnencrypted || allowedByFlag
}
