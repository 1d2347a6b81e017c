import { linkSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { writeFileAtomicSync } from '../util/atomic-write.js'

/** The account of an embedded service: made once, kept in its directory (0600). */
export interface EmbeddedAccount { walletKey: string, address: string, apiKey: string }

const ACCOUNT_FILE = 'embedded-account.json'

export function readAccount (dir: string): EmbeddedAccount | undefined {
  try {
    return JSON.parse(readFileSync(join(dir, ACCOUNT_FILE), 'utf8')) as EmbeddedAccount
  } catch {
    return undefined
  }
}

/**
 * The address kept beside the key when the account was made (lowercase, as login derived it), or
 * undefined when it is not one: the caller derives it from the key then.
 */
export function knownAddress (account: EmbeddedAccount): string | undefined {
  return typeof account.address === 'string' && /^0x[0-9a-f]{40}$/.test(account.address) ? account.address : undefined
}

/**
 * Keeps the first account made for a directory: a daemon and a command starting together on a
 * fresh directory each sign up, and both must end up the same user. The file appears whole
 * (written aside, fsynced, then hard-linked into place, which fails if another got there first).
 */
export function claimAccount (dir: string, mine: EmbeddedAccount): EmbeddedAccount {
  const temp = join(dir, `.${ACCOUNT_FILE}.${process.pid}`)
  writeFileAtomicSync(temp, JSON.stringify(mine, null, 2) + '\n', { mode: 0o600 })
  try {
    linkSync(temp, join(dir, ACCOUNT_FILE))
    return mine
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    return readAccount(dir) ?? mine
  } finally {
    rmSync(temp, { force: true })
  }
}
