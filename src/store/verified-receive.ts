import { createWriteStream } from 'node:fs'
import { rename, rm } from 'node:fs/promises'
import { dirname } from 'node:path'
import { type Readable, Transform, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { CidBuilder, type CidProfile } from '../content/index.js'
import { IntegrityError } from '../errors.js'
import { fsyncPath } from '../util/fsync.js'
import { streamClosed } from '../util/stream-closed.js'
import { Alongside } from './alongside.js'

/** What one source's try tells the caller beyond its error (a gateway's failover, say). */
export interface SourceTry {
  /** Its answer was not the CID's bytes (larger than the caller knows the content to be, say). */
  wrongBytes: boolean
  /** The caller's own failure over the CID's bytes: the read fails with it, no other source is asked. */
  fatal?: { readonly err: unknown }
}

/** Where a verified fetch reads an object from: a gateway's answer, or the service's store in this process. */
export interface ByteSource {
  readonly stream: Readable
  readonly total: number | undefined
  /** For messages: the gateway's origin with the path, or the store. */
  readonly from: string
  /** What the fetch answers as where the bytes came from. */
  readonly origin: string
  /** The error for bytes past `cap`. */
  readonly overCap: (cap: number) => Error
}

/** What {@link receiveVerified} takes of a fetch's options (`FetchOptions` in gateway-client.ts says what each is). */
export interface ReceiveOptions {
  readonly signal?: AbortSignal
  readonly onProgress?: (received: number, total: number | undefined) => void
  readonly boundBy?: { readonly prefixBytes: number, readonly bound: (prefix: Buffer) => number | undefined }
  readonly maxBytes?: number
  readonly durable?: boolean
}

/** Where the bytes go when a reader takes them and no file is kept. */
function discard (): Writable {
  return new Writable({ write (_chunk, _encoding, done) { done() } })
}

/**
 * One source's bytes of `cid`: hashed to the CID under `profile` as they stream, at most
 * `maxBytes` (or the bound `options.boundBy` finds), into `destination` (a temp file beside it,
 * renamed once they are verified) or handed to `alongside` as they come (which must rely on
 * nothing before this answers). Bytes that are not the CID's are an {@link IntegrityError}; a
 * reader that fails over the CID's own bytes is marked `tried.fatal` (no other source is asked);
 * bytes past what the caller said it knows mark `tried.wrongBytes`.
 */
export async function receiveVerified (open: (onTooLarge: () => void) => Promise<ByteSource>, cid: string, profile: CidProfile, destination: string | undefined, alongside: ((bytes: Readable) => Promise<void>) | undefined, options: ReceiveOptions, maxBytes: number, tried: SourceTry): Promise<{ size: number, gateway: string }> {
  const temp = destination === undefined ? undefined : `${destination}.${process.pid}.part`
  let tooLarge = false
  let beside: Alongside | undefined
  let readerFailed: { readonly err: unknown } | undefined
  let sink: Writable | undefined
  try {
    const { stream, total, from, origin, overCap } = await open(() => { tooLarge = true })
    beside = alongside === undefined ? undefined : new Alongside(alongside)
    const reader = beside
    const builder = new CidBuilder(profile)
    let received = 0
    let cap = maxBytes
    const boundBy = options.boundBy
    let prefix: Buffer[] | undefined = boundBy === undefined ? undefined : []
    const hasher = new Transform({
      transform (chunk: Buffer, _encoding, done) {
        received += chunk.byteLength
        if (prefix !== undefined && boundBy !== undefined) {
          prefix.push(chunk)
          if (received >= boundBy.prefixBytes) {
            const head = Buffer.concat(prefix)
            prefix = undefined
            try {
              cap = Math.min(cap, boundBy.bound(head) ?? cap)
            } catch (err) {
              tooLarge = true
              done(err as Error)
              return
            }
          }
        }
        // Nothing past the cap reaches the disk: the fetch stops there.
        if (received > cap) { tooLarge = true; done(overCap(cap)); return }
        builder.update(chunk)
        options.onProgress?.(received, total)
        if (reader === undefined) done(null, chunk)
        else reader.feed(chunk, () => { done(null, chunk) })
      }
    })
    // 0600 from its creation: a plain object is a user's file.
    sink = temp === undefined ? discard() : createWriteStream(temp, { mode: 0o600 })
    await pipeline(stream, hasher, sink, { signal: options.signal })
    const got = builder.finish().toString()
    if (got !== cid) throw new IntegrityError(`bytes from ${from} hash to ${got}, not ${cid}`)
    const failure = await beside?.end()
    if (failure !== undefined) {
      readerFailed = { err: failure }
      throw failure
    }
    if (temp !== undefined && destination !== undefined) {
      const durable = options.durable !== false
      if (durable) await fsyncPath(temp)
      await rename(temp, destination)
      if (durable) await fsyncPath(dirname(destination))
    }
    return { size: received, gateway: origin }
  } catch (err) {
    if (sink !== undefined) await streamClosed(sink)
    if (temp !== undefined) await rm(temp, { force: true })
    await beside?.abort(err as Error)
    if (readerFailed !== undefined) tried.fatal = readerFailed
    // Larger than the caller knows the content to be (a manifest names each segment's size):
    // not what the CID names, whatever this source says.
    if ((options.maxBytes !== undefined || options.boundBy !== undefined) && tooLarge) tried.wrongBytes = true
    throw err
  }
}
