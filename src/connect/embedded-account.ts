import { existsSync, linkSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { STATE_NAMES } from '../config/index.js'
import { parseWalletKey, walletAddress } from '../crypto/index.js'
import { EmbeddedAccountChangedError } from '../errors.js'
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

/**
 * Refuses an embedded service dir that holds no account, or another one than `stateDir` used
 * before: checked before the service starts there, so a folder not mounted never becomes a new,
 * empty account that this device would then publish into. A state dir that never used one has
 * nothing to check.
 */
export function checkEmbeddedAccount (stateDir: string, dir: string): void {
  const remembered = rememberedAddress(stateDir)
  if (remembered === undefined) return
  const account = readAccount(dir)
  const address = account === undefined ? undefined : accountAddress(account)
  if (address === remembered) return
  const marker = join(stateDir, STATE_NAMES.embeddedAccount)
  const found = account === undefined
    ? existsSync(dir) ? 'holds no account' : 'does not exist'
    : `holds another account (${address ?? 'unreadable'})`
  throw new EmbeddedAccountChangedError(`the embedded service's dir ${dir} ${found}, while this state dir used account ${remembered} there. ` +
    'Is the folder mounted, or moved? Point `[service] dir` at the one it used. ' +
    `To start a new account there instead (this device's history there starts over), remove ${marker} and run again`)
}

/**
 * Notes the account this state dir uses, once: the first command that reaches the service. Best
 * effort: a state dir not made yet, or not this user's to write, is checked from a later command.
 */
export function rememberEmbeddedAccount (stateDir: string, address: string): void {
  if (rememberedAddress(stateDir) !== undefined || !existsSync(stateDir)) return
  try {
    writeFileAtomicSync(join(stateDir, STATE_NAMES.embeddedAccount), `${address}\n`, { mode: 0o600 })
  } catch {}
}

function rememberedAddress (stateDir: string): string | undefined {
  try {
    const text = readFileSync(join(stateDir, STATE_NAMES.embeddedAccount), 'utf8').trim()
    return /^0x[0-9a-f]{40}$/.test(text) ? text : undefined
  } catch {
    return undefined
  }
}

function accountAddress (account: EmbeddedAccount): string | undefined {
  try {
    return knownAddress(account) ?? walletAddress(parseWalletKey(account.walletKey))
  } catch {
    return undefined
  }
}
