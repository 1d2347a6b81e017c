/**
 * What a long call tells its caller while it works: a `type` named `room:what` (`get:file`,
 * `storing:stored`) and the event's `detail`. The shape is helia's progress events (the
 * `progress-events` package), so a listener written for one reads the other.
 */
export interface ProgressEvent<T extends string, D> {
  readonly type: T
  readonly detail: D
}

/** What every long call takes: a signal to stop it, and a listener for its events. */
export interface ProgressOptions<E extends ProgressEvent<string, unknown>> {
  readonly signal?: AbortSignal
  readonly onProgress?: (event: E) => void
}
