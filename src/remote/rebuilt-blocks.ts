import type { CID } from 'multiformats/cid'
import { CidBuilder, type CidProfile } from '../content/index.js'
import { ContentNotFoundError, GatewayFetchError, IntegrityError, RemoteNotFoundError } from '../errors.js'
import type { HttpClient } from './http-client.js'
import { ANSWER_LIMITS, announcedLength, tooLargeError } from './body.js'
import { canonicalCid } from './cid-text.js'

/** What {@link fetchBlocks} takes (the gateway client's fetch options, less what only a file fetch uses). */
export interface RebuildFetchOptions {
  readonly signal?: AbortSignal
  readonly onProgress?: (received: number, total: number | undefined) => void
  /** The most the object may weigh (the gateway client's maximum otherwise). */
  readonly maxBytes?: number
  readonly deadlineMs?: number
}

/** Takes each block of an object as it is rebuilt; awaited, so a slow writer holds the fetch back. */
export type BlockSink = (cid: CID, bytes: Uint8Array) => Promise<void>

/**
 * A body's chunks regathered into whole leaves (`size` bytes each) in buffers of their own: the
 * builder then hashes each in place and hands it on as the block itself (raw leaves), where it
 * copied every leaf into its reused buffer and the block out again (two copies a byte; one now).
 */
class WholeChunks {
  private current: Buffer | undefined
  private filled = 0
  private readonly made = new WeakSet<ArrayBufferLike>()

  constructor (private readonly size: number) {}

  /** The leaves `bytes` completes, in order. */
  add (bytes: Uint8Array): Uint8Array[] {
    const whole: Uint8Array[] = []
    for (let at = 0; at < bytes.byteLength;) {
      // Its own ArrayBuffer (allocUnsafeSlow: never a slice of the shared pool), so `owns` can tell.
      const current = this.current ??= this.fresh(this.size)
      const take = Math.min(this.size - this.filled, bytes.byteLength - at)
      current.set(bytes.subarray(at, at + take), this.filled)
      this.filled += take
      at += take
      if (this.filled === this.size) {
        whole.push(current)
        this.current = undefined
        this.filled = 0
      }
    }
    return whole
  }

  /** What is left past the last whole leaf, if anything. */
  rest (): Uint8Array | undefined {
    return this.current === undefined || this.filled === 0 ? undefined : this.current.subarray(0, this.filled)
  }

  /** Whether `bytes` lies in a buffer made here (one the builder did not reuse). */
  owns (bytes: Uint8Array): boolean {
    return this.made.has(bytes.buffer)
  }

  private fresh (size: number): Buffer {
    const buffer = Buffer.allocUnsafeSlow(size)
    this.made.add(buffer.buffer)
    return buffer
  }
}

/**
 * Fetches `/ipfs/<cid>` and rebuilds its UnixFS blocks from the bytes as they stream in, with the
 * profile the object was uploaded with (the same builder the upload used, so the same blocks the
 * service holds), handing each to `sink` at once: memory stays at a chunk. The root is compared
 * with `cid` when the bytes end; a mismatch is an {@link IntegrityError} and the caller must
 * discard what the sink took (the blocks are each what their own CID says, but not this object's).
 * The sink may keep the bytes it is handed.
 * A gateway that fails midway is followed by the next, whose blocks must be the same ones up to
 * where the first stopped (else integrity again); those already handed over are not handed twice.
 */
export async function fetchBlocks (gateways: readonly HttpClient[], cid: string, profile: CidProfile, sink: BlockSink, options: RebuildFetchOptions = {}): Promise<{ size: number, blocks: number }> {
  canonicalCid(cid)
  const maxBytes = options.maxBytes ?? ANSWER_LIMITS.fetch
  const emitted: string[] = []
  const failures: string[] = []
  let notFound = 0
  for (const gateway of gateways) {
    const request = { method: 'GET' as const, path: `/ipfs/${cid}`, auth: false, signal: options.signal, headers: { accept: 'application/octet-stream' }, deadlineMs: options.deadlineMs ?? 30 * 60_000 }
    const origin = gateway.url({ path: '' }).origin
    let made = 0
    try {
      const response = await gateway.send(request)
      const total = announcedLength(response.headers)
      if (total !== undefined && total > maxBytes) {
        response.body.on('error', () => {})
        response.body.destroy()
        throw new IntegrityError(`${origin} announced ${total} bytes for ${cid}, more than the ${maxBytes} it can hold`)
      }
      const pending: Array<{ cid: CID, bytes: Uint8Array }> = []
      const chunks = new WholeChunks(profile.chunkSize)
      // A leaf is a view of a chunk WholeChunks made and never reuses, so the sink may keep it as it
      // is; anything else (a builder's own buffer) is copied, since the builder reuses it.
      const builder = new CidBuilder(profile, { onBlock: (c, b) => { pending.push({ cid: c, bytes: chunks.owns(b) ? b : new Uint8Array(b) }) } })
      const drain = async (): Promise<void> => {
        for (const block of pending.splice(0)) {
          const at = made++
          if (at < emitted.length) {
            if (emitted[at] !== block.cid.toString()) throw new IntegrityError(`${origin} sent other bytes for ${cid} than the gateway before it (block ${at} is ${block.cid.toString()}, not ${emitted[at] as string})`)
            continue
          }
          await sink(block.cid, block.bytes)
          emitted.push(block.cid.toString())
        }
      }
      let received = 0
      for await (const chunk of response.body) {
        received += (chunk as Uint8Array).byteLength
        if (received > maxBytes) throw tooLargeError(gateway.context(request), maxBytes)
        for (const whole of chunks.add(chunk as Uint8Array)) builder.update(whole)
        await drain()
        options.onProgress?.(received, total)
      }
      const last = chunks.rest()
      if (last !== undefined) builder.update(last)
      const root = builder.finish()
      await drain()
      if (root.toString() !== cid) throw new IntegrityError(`bytes from ${origin} hash to ${root.toString()}, not ${cid}`)
      return { size: received, blocks: emitted.length }
    } catch (err) {
      if (options.signal?.aborted === true) throw err
      // Blocks the sink took may not be this object's: only the caller can undo them.
      if (err instanceof IntegrityError) throw err
      if (err instanceof RemoteNotFoundError) notFound++
      failures.push((err as Error).message)
    }
  }
  const summary = failures.length === 0 ? 'no gateway is configured: set [service] gateways' : failures.join('; ')
  if (notFound > 0 && notFound === gateways.length) throw new ContentNotFoundError(`no gateway has ${cid} (each answered 404)`)
  throw new GatewayFetchError(`could not fetch ${cid}: ${summary}`)
}
