import { randomBytes, timingSafeEqual } from 'node:crypto'
import { chmodSync, closeSync, fsyncSync, linkSync, openSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs'
import type { IncomingMessage } from 'node:http'
import { join } from 'node:path'
import { HttpFailure } from './http.js'
import { isOwnHost, isOwnOrigin, ownHosts } from '../util/own-host.js'

export const ADMIN_TOKEN_FILE = 'admin.token'

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+)$/

/**
 * The admin token: random, made once per service directory, kept 0600 beside its database. Only
 * someone who can read the directory may mint session tokens or inject faults.
 */
export function ensureAdminToken (dir: string): string {
  const path = join(dir, ADMIN_TOKEN_FILE)
  const existing = readToken(path)
  if (existing !== undefined) return existing
  // Written aside and hard-linked into place: two processes starting on one directory agree on one token.
  const token = randomBytes(32).toString('base64url')
  const temp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
  const fd = openSync(temp, 'wx', 0o600)
  try {
    writeSync(fd, `${token}\n`)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  try {
    linkSync(temp, path)
    return token
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    return readToken(path) ?? token
  } finally {
    rmSync(temp, { force: true })
  }
}

function readToken (path: string): string | undefined {
  const stats = statSync(path, { throwIfNoEntry: false })
  if (stats === undefined) return undefined
  if ((stats.mode & 0o077) !== 0) chmodSync(path, 0o600)
  const token = readFileSync(path, 'utf8').trim()
  if (token !== '') return token
  rmSync(path, { force: true })
  return undefined
}

/** The exact `Host` values the admin routes answer to (util/own-host.ts). */
export function adminHosts (boundHost: string, port: number): Set<string> {
  return ownHosts(boundHost, port)
}

function sameToken (header: string | undefined, token: string): boolean {
  const given = Buffer.from(/^Bearer (.+)$/.exec(header ?? '')?.[1] ?? '')
  const expected = Buffer.from(token)
  return given.byteLength === expected.byteLength && timingSafeEqual(given, expected)
}

/**
 * Refuses an admin request unless it comes from loopback, names our own host and port, is not sent
 * by a web page (a cross-origin or `null` Origin), and carries the admin token.
 */
export function checkAdminRequest (req: IncomingMessage, hosts: ReadonlySet<string>, token: string): void {
  if (!LOOPBACK.test(req.socket.remoteAddress ?? '')) throw new HttpFailure(403, 'admin routes answer only to loopback')
  if (!isOwnHost(req.headers.host, hosts)) throw new HttpFailure(403, 'admin routes answer only to the service\'s own loopback address and port')
  if (!isOwnOrigin(req.headers.origin, hosts)) throw new HttpFailure(403, 'admin routes refuse requests from web pages')
  if (!sameToken(req.headers.authorization, token)) {
    throw new HttpFailure(401, `admin routes need Authorization: Bearer <the token in the service directory's ${ADMIN_TOKEN_FILE}>`)
  }
}
