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
 * Refuses an embedded service dir that holds no account, or another one than `stateDir` noted:
 * checked before the service starts there, so a folder not mounted never becomes a new, empty
 * account that this device would then publish into. Answers the address of the account the dir
 * holds now (undefined where it holds none yet), and the one noted (undefined where none is).
 */
export function checkEmbeddedAccount (stateDir: string, dir: string): { readonly address?: string, readonly remembered?: string } {
  const account = readAccount(dir)
  const address = account === undefined ? undefined : accountAddress(account)
  const remembered = rememberedAddress(stateDir)
  if (remembered === undefined || address === remembered) return { address, remembered }
  const marker = join(stateDir, STATE_NAMES.embeddedAccount)
  const found = account === undefined
    ? existsSync(dir) ? 'holds no account' : 'does not exist'
    : `holds another account (${address ?? 'unreadable'})`
  throw new EmbeddedAccountChangedError(`the embedded service's dir ${dir} ${found}, while this state dir used account ${remembered} there. ` +
    'Is the folder mounted, or moved? Point `[service] dir` at the one it used. ' +
    `If this device is meant to use the account there now, remove ${marker} and run again. ` +
    'If the folder is lost for good, set this device up again on a new one: its files are not stored there, nor its history published')
}

/**
 * Notes the account this state dir uses, once: the caller's to say when (an account in use, or the
 * one a join file names). Best effort: a state dir not made yet, or not this user's to write, is
 * noted by a later command.
 */
export function rememberEmbeddedAccount (stateDir: string, address: string): void {
  if (!existsSync(stateDir) || existsSync(join(stateDir, STATE_NAMES.embeddedAccount))) return
  try {
    writeFileAtomicSync(join(stateDir, STATE_NAMES.embeddedAccount), `${address}\n`, { mode: 0o600 })
  } catch {}
}

/**
 * The address noted, or undefined where none is. A note that cannot be read or is no address
 * fails closed: skipped, a damaged note would let any account pass.
 */
function rememberedAddress (stateDir: string): string | undefined {
  const marker = join(stateDir, STATE_NAMES.embeddedAccount)
  let text: string
  try {
    text = readFileSync(marker, 'utf8').trim().toLowerCase()
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw new EmbeddedAccountChangedError(`${marker}, which notes the embedded account this state dir uses, cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)}): make it readable, or remove it to note the account the service dir holds`)
  }
  if (/^0x[0-9a-f]{40}$/.test(text)) return text
  throw new EmbeddedAccountChangedError(`${marker}, which notes the embedded account this state dir uses, holds no address: remove it to note the account the service dir holds`)
}

function accountAddress (account: EmbeddedAccount): string | undefined {
  try {
    return (knownAddress(account) ?? walletAddress(parseWalletKey(account.walletKey))).toLowerCase()
  } catch {
    return undefined
  }
}

/** The address of the account the embedded service dir holds, or undefined where it holds none. */
export function embeddedAccountAddress (dir: string): string | undefined {
  const account = readAccount(dir)
  return account === undefined ? undefined : accountAddress(account)
}
