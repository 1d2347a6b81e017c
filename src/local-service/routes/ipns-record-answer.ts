import { createHash } from 'node:crypto'
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http'
import { IPNS_RECORD_TYPE } from '../../crypto/index.js'
import type { ServedRecord } from '../ipns-records.js'
import { parseAccept } from './gateway-format.js'
import { head } from './gateway-respond.js'

/** `max-age` when a record carries no TTL, and for a 404 (the delegated routing spec's default). */
export const DEFAULT_RECORD_MAX_AGE = 60

/**
 * Whether a request asks for the signed record rather than what it points to: `?format=ipns-record`,
 * or `Accept` that prefers the record's type to the verifiable block and CAR types.
 */
export function wantsIpnsRecord (url: URL, accept: string | undefined): boolean {
  const format = url.searchParams.get('format')
  if (format !== null && format !== '') return format === 'ipns-record'
  const ranges = parseAccept(accept)
  const record = ranges.find(r => r.type === IPNS_RECORD_TYPE)
  if (record === undefined || record.q <= 0) return false
  return !ranges.some(r => r.type !== IPNS_RECORD_TYPE && r.type.startsWith('application/vnd.') && r.q > record.q)
}

/** Whether `Accept` takes the record's type (a missing header takes anything). */
export function acceptsIpnsRecord (accept: string | undefined): boolean {
  const ranges = parseAccept(accept)
  if (ranges.length === 0) return true
  return ranges.some(r => r.q > 0 && (r.type === IPNS_RECORD_TYPE || r.type === 'application/*' || r.type === '*/*'))
}

/** `Cache-Control` for a record, from its TTL. */
export function recordCacheControl (record: ServedRecord): string {
  return `public, max-age=${record.ttlSeconds > 0 ? record.ttlSeconds : DEFAULT_RECORD_MAX_AGE}`
}

/** Sends the signed record as it is stored: 200 (or 304 for a matching `If-None-Match`), its ETag its hash. */
export function sendIpnsRecord (req: IncomingMessage, res: ServerResponse, record: ServedRecord, extra: OutgoingHttpHeaders = {}): void {
  const etag = `"${createHash('sha256').update(record.bytes).digest('base64url')}"`
  const headers: OutgoingHttpHeaders = {
    'content-type': IPNS_RECORD_TYPE,
    'content-length': String(record.bytes.byteLength),
    'cache-control': recordCacheControl(record),
    'last-modified': new Date(record.lastUpdate).toUTCString(),
    vary: 'Accept',
    'x-content-type-options': 'nosniff',
    ...extra
  }
  if (!head(req, res, headers, etag)) return
  res.end(record.bytes)
}
