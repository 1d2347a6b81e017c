import { PassThrough, type Readable } from 'node:stream'

/**
 * A reader handed a fetch's bytes as they arrive (`GatewayClient.fetchVerifiedInto`), at the pace
 * it reads them (the fetch waits while it has no room). What it makes is not to be relied on
 * until the fetch verified the bytes; its failure is kept and answered at the end.
 */
export class Alongside {
  private readonly stream = new PassThrough({ highWaterMark: 1024 * 1024 })
  private readonly result: Promise<{ readonly failed: boolean, readonly err?: unknown }>

  constructor (reader: (bytes: Readable) => Promise<void>) {
    // The reader sees a failure through its own pipeline; none is left unhandled here.
    this.stream.on('error', () => {})
    this.result = reader(this.stream).then(() => ({ failed: false }), (err: unknown) => ({ failed: true, err }))
  }

  /** Hands a chunk on; `next` runs once the reader has room for more (or has stopped reading). */
  feed (chunk: Buffer, next: () => void): void {
    if (this.stream.destroyed || this.stream.writableEnded || this.stream.write(chunk)) { next(); return }
    const go = (): void => {
      this.stream.off('drain', go)
      this.stream.off('close', go)
      next()
    }
    this.stream.on('drain', go)
    this.stream.on('close', go)
  }

  /** Every byte was handed on: waits for the reader; answers its failure, or undefined. */
  async end (): Promise<unknown> {
    this.stream.end()
    const { failed, err } = await this.result
    return failed ? err ?? new Error('the reader beside the fetch failed') : undefined
  }

  /** The fetch failed: the reader is stopped, and waited for. */
  async abort (err: Error): Promise<void> {
    this.stream.destroy(err)
    await this.result
  }
}
