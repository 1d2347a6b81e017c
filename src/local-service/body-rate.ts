import type { IncomingMessage } from 'node:http'

/** The slowest a request body may arrive once its grace is over. */
export interface BodyRate {
  /** Bytes per second, averaged from the request's start (0 turns the bound off). */
  readonly minBytesPerSecond: number
  /** How long a body may take before the rate counts: slow starts, small bodies. */
  readonly graceMs: number
}

/** 4 KiB/s after 30 s: any upload that is moving passes; a trickle does not hold a connection for good. */
export const DEFAULT_BODY_RATE: BodyRate = { minBytesPerSecond: 4096, graceMs: 30_000 }

/**
 * Cuts a request whose body arrives slower than `rate`, counting bytes as the socket delivers them
 * (before any route reads them, without changing how the body flows). Any local user can reach
 * the service, and a body trickled a byte at a time kept its connection busy for good (the
 * service lifts the request timeout for uploads of many GB): as many as it holds connections, and
 * it answered nobody else. Answers a stop, for when the request ends.
 */
export function guardBodyRate (req: IncomingMessage, rate: BodyRate): () => void {
  if (rate.minBytesPerSecond <= 0) return () => {}
  let received = 0
  const started = Date.now()
  const push = req.push.bind(req)
  req.push = (chunk: unknown, encoding?: BufferEncoding): boolean => {
    if (chunk !== null && chunk !== undefined) received += (chunk as { length: number }).length
    return push(chunk, encoding)
  }
  const timer = setInterval(() => {
    const elapsed = Date.now() - started
    if (req.complete) { clearInterval(timer); return }
    if (elapsed <= rate.graceMs || received >= rate.minBytesPerSecond * (elapsed - rate.graceMs) / 1000) return
    clearInterval(timer)
    req.socket.destroy()
  }, Math.max(25, Math.min(1000, rate.graceMs / 4)))
  timer.unref()
  return () => { clearInterval(timer) }
}
