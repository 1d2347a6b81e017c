import { randomBytes, timingSafeEqual } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { writeFileAtomicSync } from '../util/atomic-write.js'
import { STATE_NAMES } from '../config/index.js'

export const STATUS_TOKEN_FILE = STATE_NAMES.statusToken

/** The token POSTs to the status endpoint need: random, made once per state dir, 0600. */
export function ensureStatusToken (stateDir: string): string {
  const existing = readStatusToken(stateDir)
  if (existing !== undefined) return existing
  const token = randomBytes(32).toString('base64url')
  writeFileAtomicSync(join(stateDir, STATUS_TOKEN_FILE), `${token}\n`, { mode: 0o600 })
  return token
}

export function readStatusToken (stateDir: string): string | undefined {
  try {
    const token = readFileSync(join(stateDir, STATUS_TOKEN_FILE), 'utf8').trim()
    return token === '' ? undefined : token
  } catch {
    return undefined
  }
}

/** `Authorization: Bearer <token>` compared in constant time. */
export function hasStatusToken (header: string | undefined, token: string): boolean {
  const given = Buffer.from(/^Bearer (.+)$/.exec(header ?? '')?.[1] ?? '')
  const expected = Buffer.from(token)
  return given.byteLength === expected.byteLength && timingSafeEqual(given, expected)
}
