import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Config } from '../config/index.js'
import { writeFileAtomicSync } from '../util/atomic-write.js'
import { credentialsDir } from './credentials.js'

/** Beside the primary's API key: the address of the wallet that signed in for it (not a secret). */
const FILE = 'wallet-address'

/** Records which wallet signed in to the primary (`cidsync login`), so a mirror is never signed in with it unawares. */
export function savePrimaryWallet (config: Config, address: string): void {
  writeFileAtomicSync(join(credentialsDir(config), FILE), `${address.toLowerCase()}\n`, { mode: 0o600 })
}

/**
 * The address of the wallet the primary was signed in with, when `cidsync login` recorded it. The
 * sign-in message names no service: whoever gets a wallet's signature on a message can have asked
 * another service for it, so a mirror signed in with the primary's wallet could relay the
 * primary's message and get an API key for the primary's account.
 */
export function primaryWallet (config: Config): string | undefined {
  try {
    const text = readFileSync(join(credentialsDir(config), FILE), 'utf8').trim().toLowerCase()
    return /^0x[0-9a-f]{40}$/.test(text) ? text : undefined
  } catch {
    return undefined
  }
}
