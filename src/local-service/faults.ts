import type { IncomingMessage, ServerResponse } from 'node:http'
import { z } from 'zod'

/** What to do wrong on a route, for tests of the clients' resilience. */
export const faultSchema = z.strictObject({
  /** Share of requests that fail with `status` (0–1). */
  errorRate: z.number().min(0).max(1).default(0),
  status: z.int().min(400).max(599).default(500),
  /** Sent with a 429 or 503. */
  retryAfterSeconds: z.int().min(0).optional(),
  latencyMs: z.int().min(0).max(60_000).default(0),
  /** Share of requests whose connection is cut before an answer. */
  resetRate: z.number().min(0).max(1).default(0),
  /** Share of requests carried out in full whose answer is then lost: the connection is cut instead. */
  resetAfterRate: z.number().min(0).max(1).default(0),
  /** Gateway bodies: cut short, or one bit flipped. */
  truncate: z.boolean().default(false),
  bitflip: z.boolean().default(false),
  /** `deal_status`: the field names production used before (`dealId`, `miner`, `storageProvider`). */
  legacyDealFields: z.boolean().default(false),
  /** How many requests the fault applies to; then it is gone. Unbounded when absent. */
  times: z.int().min(1).optional()
})

export type Fault = z.output<typeof faultSchema>
export type FaultInput = z.input<typeof faultSchema>

/** Faults by route name; `*` applies to every route without one of its own. */
export class Faults {
  private readonly byRoute = new Map<string, Fault & { remaining?: number }>()

  set (route: string, fault: FaultInput): void {
    const parsed = faultSchema.parse(fault)
    this.byRoute.set(route, { ...parsed, remaining: parsed.times })
  }

  clear (): void {
    this.byRoute.clear()
  }

  /**
   * Whether a fault is still set for `route` itself (one set with `times` goes once it has been
   * applied that often): lets a test see that its held request has arrived.
   */
  has (route: string): boolean {
    return this.byRoute.has(route)
  }

  /** The fault to apply to this request of `route`, if any, counted against its `times`. */
  take (route: string): Fault | undefined {
    const key = this.byRoute.has(route) ? route : this.byRoute.has('*') ? '*' : undefined
    if (key === undefined) return undefined
    const fault = this.byRoute.get(key) as Fault & { remaining?: number }
    if (fault.remaining !== undefined) {
      fault.remaining--
      if (fault.remaining <= 0) this.byRoute.delete(key)
    }
    return fault
  }
}

/**
 * Lets the route do its work (store the upload, put the pointer) and then cuts the connection
 * instead of answering: what a client sees when an answer is lost on the way back.
 */
export function loseAnswer (req: IncomingMessage, res: ServerResponse): void {
  res.writeHead = (() => res) as unknown as ServerResponse['writeHead']
  res.setHeader = (() => res) as unknown as ServerResponse['setHeader']
  res.write = (() => true) as unknown as ServerResponse['write']
  res.end = (() => { req.socket.destroy(); return res }) as unknown as ServerResponse['end']
}
