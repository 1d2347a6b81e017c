import { backoffMs } from '../util/backoff.js'

/** How a request is retried: bounded attempts, exponential backoff with full jitter. */
export interface RetryPolicy {
  /** Attempts in all, the first included. */
  readonly attempts: number
  readonly baseDelayMs: number
  readonly maxDelayMs: number
  /** The longest `Retry-After` honoured; a longer one fails the request at once. */
  readonly maxRetryAfterMs: number
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { attempts: 5, baseDelayMs: 250, maxDelayMs: 10_000, maxRetryAfterMs: 120_000 }

/** 408, 429 and 5xx may succeed later; every other 4xx never will. */
export function isRetryableStatus (status: number): boolean {
  return status === 408 || status === 429 || status >= 500
}

const RETRYABLE_NETWORK_CODES = new Set([
  'ECONNRESET', 'ECONNREFUSED', 'ECONNABORTED', 'EPIPE', 'ETIMEDOUT', 'EAI_AGAIN', 'ENETUNREACH', 'EHOSTUNREACH',
  'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CLOSED'
])

export function isRetryableNetworkError (err: unknown): boolean {
  const code = (err as { code?: string } | undefined)?.code
  return code !== undefined && RETRYABLE_NETWORK_CODES.has(code)
}

/** `Retry-After` as seconds or an HTTP date, in ms from `now`; undefined when absent or unreadable. */
export function parseRetryAfter (value: string | string[] | undefined, now = Date.now()): number | undefined {
  const text = Array.isArray(value) ? value[0] : value
  if (text === undefined || text.trim() === '') return undefined
  if (/^\d+$/.test(text.trim())) return Number(text.trim()) * 1000
  const at = Date.parse(text)
  return Number.isNaN(at) ? undefined : Math.max(0, at - now)
}

/** The wait before attempt `attempt + 1` (attempt counts from 1): full jitter under an exponential cap. */
export function backoffDelay (policy: RetryPolicy, attempt: number, random = Math.random): number {
  return backoffMs({ firstMs: policy.baseDelayMs, maxMs: policy.maxDelayMs, jitter: 'full' }, attempt, random)
}

export { sleep } from '../util/backoff.js'
