import type { IncomingMessage, ServerResponse } from 'node:http'
import type { DaemonEvent, EventBus } from './event-bus.js'

export interface EventStreamLimits {
  /** Streams open at once; one more ends the oldest to take its place. */
  readonly maxStreams?: number
  /** Bytes a stream may have waiting to be sent before its consumer counts as stalled and is dropped. */
  readonly maxBufferedBytes?: number
  /** A comment line this often, so a consumer (and any proxy) sees the stream is alive. */
  readonly heartbeatMs?: number
}

export const DEFAULT_MAX_STREAMS = 16
export const DEFAULT_MAX_BUFFERED_BYTES = 256 * 1024
const DEFAULT_HEARTBEAT_MS = 15_000

/** Bytes written and not yet taken by the kernel: the response's own buffer and its socket's. */
function waiting (res: ServerResponse): number {
  return res.writableLength + (res.socket?.writableLength ?? 0)
}

function lastEventId (req: IncomingMessage, url: URL): number | undefined {
  const given = req.headers['last-event-id'] ?? url.searchParams.get('lastEventId') ?? undefined
  if (given === undefined || given === '') return undefined
  return /^\d+$/.test(String(given)) ? Number(given) : -1
}

/**
 * `GET /events`: Server-Sent Events from the daemon's bus. A stream resumes after
 * `Last-Event-ID` from the bus's ring (or is told of the gap, `resync`, and reads /status afresh).
 * Memory is bounded per stream: a consumer that stops reading lets bytes pile up in its socket, and
 * once more than `maxBufferedBytes` wait it is dropped, never buffered for. The number of streams
 * is capped too: a new reader past the cap ends the oldest stream, so readers that never leave
 * cannot keep everyone else out. An ended reader (a browser) reconnects with `Last-Event-ID`.
 */
export class EventStreams {
  /** Open streams, oldest first, each with what ends it. */
  private readonly open = new Map<ServerResponse, () => void>()
  private readonly maxStreams: number
  private readonly maxBufferedBytes: number
  private readonly heartbeatMs: number
  /** Consumers dropped for not reading, since start (shown in status). */
  dropped = 0
  /** Streams ended to make room for a newer reader, since start. */
  evicted = 0
  /** The most bytes any stream had waiting when an event came: what the bound kept it to. */
  peakWaiting = 0

  constructor (private readonly bus: EventBus, limits: EventStreamLimits = {}) {
    this.maxStreams = limits.maxStreams ?? DEFAULT_MAX_STREAMS
    this.maxBufferedBytes = limits.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES
    this.heartbeatMs = limits.heartbeatMs ?? DEFAULT_HEARTBEAT_MS
  }

  get streams (): number {
    return this.open.size
  }

  handle (req: IncomingMessage, res: ServerResponse, url: URL, hello: Record<string, unknown>): void {
    // Ended cleanly, with a word why: a browser's EventSource comes back after `retry` and resumes.
    for (const [oldest, end] of this.open) {
      if (this.open.size < this.maxStreams) break
      this.evicted++
      end()
      if (!oldest.destroyed && !oldest.writableEnded) oldest.end(`event: closed\ndata: ${JSON.stringify({ reason: `a newer reader took this stream's place (at most ${this.maxStreams} are open)` })}\n\n`)
    }
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      connection: 'keep-alive'
    })
    let unsubscribe = (): void => {}
    const heartbeat = setInterval(() => { this.send(res, ': alive\n\n', drop) }, this.heartbeatMs)
    heartbeat.unref()
    const drop = (): void => {
      this.dropped++
      res.destroy()
    }
    const end = (): void => {
      clearInterval(heartbeat)
      unsubscribe()
      this.open.delete(res)
    }
    this.open.set(res, end)
    res.once('close', end)
    // The browser reconnects after 2 s; `hello` carries no id, so it never moves Last-Event-ID.
    let head = `retry: 2000\nevent: hello\ndata: ${JSON.stringify({ ...hello, lastId: this.bus.lastId })}\n\n`
    const after = lastEventId(req, url)
    if (after !== undefined) {
      const resume = this.bus.since(after)
      if ('gap' in resume) head += `event: resync\ndata: ${JSON.stringify({ reason: resume.gap })}\n\n`
      else head += resume.events.map(event => event.frame).join('')
    }
    if (!this.send(res, head, drop)) return
    unsubscribe = this.bus.subscribe((event: DaemonEvent) => { this.send(res, event.frame, drop) })
  }

  /** Ends every stream (the daemon stops). */
  closeAll (): void {
    for (const res of [...this.open.keys()]) res.destroy()
    this.open.clear()
  }

  /** Writes, unless the consumer already has more than the bound waiting: then it is dropped. */
  private send (res: ServerResponse, text: string, drop: () => void): boolean {
    if (res.destroyed || res.writableEnded) return false
    const bytes = waiting(res)
    if (bytes > this.peakWaiting) this.peakWaiting = bytes
    if (bytes > this.maxBufferedBytes) {
      drop()
      return false
    }
    res.write(text)
    return true
  }
}
