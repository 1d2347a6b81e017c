import { createHash, randomBytes, scryptSync } from 'node:crypto'
import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { ConfigError, SnapshotKeyError, UsageError } from '../errors.js'
import { writeFileAtomicSync } from '../util/atomic-write.js'
import { STATE_NAMES } from '../config/index.js'

export const KEY_FILE = STATE_NAMES.snapshotKey
export const SALT_FILE = STATE_NAMES.snapshotSalt
const EXPORT_PREFIX = 'cidsync-key-1:'
const KEY_BYTES = 32
// scrypt at N = 2^15, r = 8: 32 MiB, and slow on purpose, so derived once per run and salt.
const SCRYPT = { N: 1 << 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 }

/** The key snapshots are encrypted with, and how a header names it. */
export interface SnapshotKey {
  readonly key: Buffer
  readonly keyId: string
  /** base64 salt when derived from a passphrase; empty for a random key. */
  readonly salt: string
}

export function keyIdOf (key: Buffer): string {
  return createHash('sha256').update(key).digest().subarray(0, 8).toString('hex')
}

/**
 * Keys derived in this process, by salt and passphrase. A restore opens a manifest and tens of
 * segments sealed under one salt, and each scrypt is slow on purpose. A handful at most (one salt
 * per state dir); the passphrase is held in memory for the run anyway.
 */
const derived = new Map<string, SnapshotKey>()
const KEPT_DERIVED = 8

function fromPassphrase (passphrase: string, salt: Buffer): SnapshotKey {
  const memo = `${salt.toString('base64')}\u0000${createHash('sha256').update(passphrase.normalize('NFC')).digest('hex')}`
  const known = derived.get(memo)
  if (known !== undefined) return known
  const key = scryptSync(passphrase.normalize('NFC'), salt, KEY_BYTES, SCRYPT)
  const made = { key, keyId: keyIdOf(key), salt: salt.toString('base64') }
  if (derived.size >= KEPT_DERIVED) derived.delete(derived.keys().next().value as string)
  derived.set(memo, made)
  return made
}

function readKeyFile (path: string): Buffer | undefined {
  const stats = statSync(path, { throwIfNoEntry: false })
  if (stats === undefined) return undefined
  if ((stats.mode & 0o077) !== 0) throw new ConfigError(`${path} is readable by others (mode ${(stats.mode & 0o777).toString(8)}): run \`chmod 600 ${path}\``)
  const key = Buffer.from(readFileSync(path, 'utf8').trim(), 'base64url')
  if (key.byteLength !== KEY_BYTES) throw new ConfigError(`${path} does not hold a 32-byte key: restore it from \`cidsync key export\` with \`cidsync key import --force\``)
  return key
}

/**
 * The key to write snapshots with: derived from the passphrase (with a salt made once and kept
 * in the state dir) when one is given, else the state dir's random key, made on first use (0600).
 */
export function writingKey (stateDir: string, passphrase?: string): SnapshotKey {
  if (passphrase !== undefined && passphrase !== '') {
    const saltPath = join(stateDir, SALT_FILE)
    let salt: Buffer
    try {
      salt = Buffer.from(readFileSync(saltPath, 'utf8').trim(), 'base64')
    } catch {
      salt = randomBytes(16)
      writeFileAtomicSync(saltPath, salt.toString('base64') + '\n', { mode: 0o600 })
    }
    return fromPassphrase(passphrase, salt)
  }
  const path = join(stateDir, KEY_FILE)
  let key = readKeyFile(path)
  if (key === undefined) {
    key = randomBytes(KEY_BYTES)
    writeFileAtomicSync(path, key.toString('base64url') + '\n', { mode: 0o600 })
  }
  return { key, keyId: keyIdOf(key), salt: '' }
}

/** The key a snapshot names in its header, or a {@link SnapshotKeyError} that says how to get it. */
export function readingKey (stateDir: string, wanted: { keyId: string, salt: string }, passphrase?: string): Buffer {
  if (wanted.salt !== '') {
    if (passphrase === undefined || passphrase === '') throw new SnapshotKeyError('the snapshot is encrypted with a passphrase: set CIDSYNC_SNAPSHOT_PASSPHRASE')
    const derived = fromPassphrase(passphrase, Buffer.from(wanted.salt, 'base64'))
    if (derived.keyId !== wanted.keyId) throw new SnapshotKeyError('the passphrase does not open this snapshot (wrong passphrase)')
    return derived.key
  }
  const key = readKeyFile(join(stateDir, KEY_FILE))
  if (key === undefined) throw new SnapshotKeyError(`the snapshot is encrypted with key ${wanted.keyId} and this device has none: on a device that has it run \`cidsync key export\`, then here \`cidsync key import\``)
  const id = keyIdOf(key)
  if (id !== wanted.keyId) throw new SnapshotKeyError(`the snapshot is encrypted with key ${wanted.keyId}, this device has key ${id}: import the right one with \`cidsync key import\``)
  return key
}

/** The state dir's key as text to carry to another device. */
export function exportKey (stateDir: string): string {
  return EXPORT_PREFIX + writingKey(stateDir).key.toString('base64url')
}

/** Installs an exported key; a different key already there is replaced only with `force`. */
export function importKey (stateDir: string, text: string, force = false): string {
  const trimmed = text.trim()
  const key = trimmed.startsWith(EXPORT_PREFIX) ? Buffer.from(trimmed.slice(EXPORT_PREFIX.length), 'base64url') : Buffer.alloc(0)
  if (key.byteLength !== KEY_BYTES) throw new UsageError(`not an exported key: expected ${EXPORT_PREFIX} followed by 43 characters, as \`cidsync key export\` prints`)
  const path = join(stateDir, KEY_FILE)
  let existing: Buffer | undefined
  try {
    existing = readKeyFile(path)
  } catch (err) {
    // A damaged or exposed key file is what --force is for: its key is lost or not secret any more.
    if (!force) throw new UsageError(`${path} cannot be used (${(err as Error).message}): add --force to replace it with this key`, { cause: err })
  }
  if (existing !== undefined && !existing.equals(key) && !force) {
    throw new UsageError(`${path} holds another key (${keyIdOf(existing)}); snapshots made with it would no longer open here: add --force to replace it`)
  }
  writeFileAtomicSync(path, key.toString('base64url') + '\n', { mode: 0o600 })
  return keyIdOf(key)
}
