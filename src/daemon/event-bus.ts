/**
 * The event types `GET /events` sends, each documented in docs/operations.md. Tooling reads them:
 * names are added over time, never renamed.
 */
export const EVENT_TYPES = [
  'watcher.state', 'folder.state', 'scan.progress', 'index.batch',
  'publish.started', 'publish.step', 'publish.done', 'publish.failed', 'merge',
  'reconcile.done', 'reconcile.failed', 'deals', 'drill', 'error', 'mirror'
] as const
export type EventType = typeof EVENT_TYPES[number]

export interface DaemonEvent {
  readonly id: number
  readonly type: EventType
  readonly at: string
  readonly data: Readonly<Record<string, unknown>>
  /** The SSE frame, made once however many streams send it. */
  readonly frame: string
}

/** What a stream asking to resume after an id gets: the events after it, or why that is not possible. */
export type Resume = { readonly events: readonly DaemonEvent[] } | { readonly gap: string }

export const DEFAULT_EVENT_RING = 1_000
/** A longer text field (an error message) is cut here: the ring's memory stays bounded. */
const MAX_TEXT = 2_000

function bounded (data: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(data)) out[key] = typeof value === 'string' && value.length > MAX_TEXT ? `${value.slice(0, MAX_TEXT)}…` : value
  return out
}

/**
 * What the daemon is doing, as numbered events: the last `capacity` kept in a ring so a stream
 * that reconnects with `Last-Event-ID` misses nothing, and handed to every subscriber as they come.
 * Ids increase by one per event within a daemon's life; a restart starts again at 1, which a
 * resuming stream is told (`gap`).
 */
export class EventBus {
  private readonly ring: DaemonEvent[] = []
  private next = 1
  private readonly subscribers = new Set<(event: DaemonEvent) => void>()

  constructor (private readonly capacity = DEFAULT_EVENT_RING) {}

  get lastId (): number {
    return this.next - 1
  }

  emit (type: EventType, data: Record<string, unknown> = {}): DaemonEvent {
    const id = this.next++
    const at = new Date().toISOString()
    const payload = bounded(data)
    const event: DaemonEvent = { id, type, at, data: payload, frame: `id: ${id}\nevent: ${type}\ndata: ${JSON.stringify({ at, ...payload })}\n\n` }
    this.ring.push(event)
    if (this.ring.length > this.capacity) this.ring.shift()
    // A subscriber that throws must not keep the others from their event.
    for (const subscriber of this.subscribers) {
      try {
        subscriber(event)
      } catch {}
    }
    return event
  }

  subscribe (subscriber: (event: DaemonEvent) => void): () => void {
    this.subscribers.add(subscriber)
    return () => { this.subscribers.delete(subscriber) }
  }

  /** The events after `lastId`, or a gap: older than the ring holds, or from before a restart. */
  since (lastId: number): Resume {
    if (!Number.isSafeInteger(lastId) || lastId < 0) return { gap: `Last-Event-ID ${String(lastId)} is not an event id` }
    if (lastId > this.lastId) return { gap: `event ${lastId} is from before the daemon restarted (its last event is ${this.lastId})` }
    const oldest = this.ring[0]?.id ?? this.next
    if (lastId < oldest - 1) return { gap: `events ${lastId + 1} to ${oldest - 1} are no longer kept (the last ${this.capacity} are)` }
    return { events: this.ring.filter(event => event.id > lastId) }
  }
}
