import type { Writable } from 'node:stream'

/**
 * Waits until a file stream has closed its descriptor. A failed pipeline answers before a sink
 * still opening has created its file: removing the file before then leaves it behind.
 */
export async function streamClosed (stream: Writable): Promise<void> {
  if (stream.closed) return
  if (!stream.destroyed) stream.destroy()
  await new Promise<void>(resolve => { stream.once('close', () => { resolve() }) })
}
