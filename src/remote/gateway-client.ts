import { Readable } from 'node:stream'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { sha256 } from 'multiformats/hashes/sha2'
import { CidBuilder, type CidProfile } from '../content/index.js'
import { IntegrityError, NameResolveError, RemoteStatusError } from '../errors.js'
import type { HttpClient } from './http-client.js'
import type { CallOptions } from './deals-client.js'
import { ANSWER_LIMITS, announcedLength, readBounded, tooLargeError } from './body.js'
import { canonicalCid } from './cid-text.js'
import { verifiedFileBytes } from './gateway-blocks.js'
import { eachGateway } from './gateway-failover.js'
import { fetchBlocks, type RebuildFetchOptions, type BlockSink } from './rebuilt-blocks.js'
import { defaultSlab, fillSlabs, receiveVerified, TooLarge, type GetOptions } from '../store/index.js'
import { resolveName, type ResolvedName } from './name-resolver.js'

/**
 * How a gateway that serves only trustless formats (IPFS trustless gateway spec) refuses a whole
 * file: then the file is put together from its raw blocks, each checked against its CID.
 */
const TRUSTLESS_ONLY = new Set([406, 501])

/**
 * A store read's options (`GetOptions`: the size known, the deadline, the bound by prefix,
 * durability), with progress as `(received, total)`: the gateway's own callback shape.
 */
export interface FetchOptions extends Omit<GetOptions, 'onProgress'>, CallOptions {
  readonly onProgress?: (received: number, total: number | undefined) => void
}

export interface FetchBytesOptions extends FetchOptions {
  /** Hashes the bytes (in order) under the profile (in another thread, say); the client compares the answer with the CID. */
  readonly hash?: (slabs: readonly Uint8Array[]) => Promise<string>
  /** Gives the next slab to fill (a caller that reuses them); every slab the same size. */
  readonly slab?: () => Uint8Array
}


/** One gateway's whole answer: slow links get time, a trickle does not get forever. */
export const FETCH_DEADLINE_MS = 30 * 60_000

export interface GatewayLimits {
  /** The most a fetch writes when the caller names no size (default {@link ANSWER_LIMITS}.fetch). */
  readonly maxBytes?: number
}

/**
 * Fetches `/ipfs/<cid>` through the gateways in order. The bytes go to a temp file while their
 * CID is recomputed under the profile they were made with; only bytes that hash to the CID are
 * renamed into place. A gateway that serves only trustless formats (a 406 or 501 for the file)
 * gives the file's raw blocks instead (`?format=raw`), each checked against its CID as it arrives;
 * the bytes they make are then checked the same way.
 */
export class GatewayClient {
  private readonly maxBytes: number

  constructor (private readonly gateways: readonly HttpClient[], limits: GatewayLimits = {}) {
    this.maxBytes = limits.maxBytes ?? ANSWER_LIMITS.fetch
  }

  async fetchVerified (cid: string, profile: CidProfile, destination: string, options: FetchOptions = {}): Promise<{ size: number, gateway: string }> {
    return await this.fetchTo(cid, profile, destination, undefined, options)
  }

  /**
   * {@link fetchVerified} that writes no file: hands the bytes, as they arrive and before they
   * are verified, to `reader` (a segment's inflating), which must make nothing that is relied on
   * before this answers. It answers once the bytes hashed to the CID and the reader is done. Bytes
   * that are not the CID's are a failure of that gateway as usual (the reader is stopped, and
   * called again for the next one); a reader that fails over the CID's own bytes fails the fetch
   * with its error, without asking another gateway for the same bytes.
   */
  async fetchVerifiedInto (cid: string, profile: CidProfile, reader: (bytes: Readable) => Promise<void>, options: FetchOptions = {}): Promise<{ size: number, gateway: string }> {
    return await this.fetchTo(cid, profile, undefined, reader, options)
  }

  private async fetchTo (cid: string, profile: CidProfile, destination: string | undefined, alongside: ((bytes: Readable) => Promise<void>) | undefined, options: FetchOptions): Promise<{ size: number, gateway: string }> {
    // Only ever `/ipfs/<cid>`: whoever parsed the CID before, text that is not one is refused here.
    canonicalCid(cid)
    const maxBytes = options.maxBytes ?? this.maxBytes
    return await eachGateway(this.gateways, cid, options.signal, async (gateway, tried) => await receiveVerified(async (onTooLarge) => {
      const { request, stream, total } = await this.openFile(gateway, cid, options, maxBytes, onTooLarge)
      return { stream, total, from: gateway.url({ path: `/ipfs/${cid}` }).origin, origin: gateway.url({ path: '' }).origin, overCap: (cap) => tooLargeError(gateway.context(request), cap) }
    }, cid, profile, destination, alongside, options, maxBytes, tried))
  }

  /**
   * Fetches `/ipfs/<cid>` into memory, in slabs of equal size (`options.slab` gives each: shared
   * memory a caller reuses, say; at most `maxBytes` in all) and answers them, filled in order, only
   * once the bytes hash to the CID under `profile`: hashed by `options.hash` (a thread's) when
   * given, else here. The gateways are tried in order, as {@link fetchVerified} tries them; nothing
   * touches the disk.
   */
  async fetchVerifiedBytes (cid: string, profile: CidProfile, options: FetchBytesOptions = {}): Promise<Uint8Array[]> {
    canonicalCid(cid)
    const slab = options.slab ?? defaultSlab
    const maxBytes = options.maxBytes ?? this.maxBytes
    const verified = async (filled: Uint8Array[], from: string): Promise<Uint8Array[]> => {
      const got = options.hash !== undefined ? await options.hash(filled) : filled.reduce((builder, bytes) => builder.update(bytes), new CidBuilder(profile)).finish().toString()
      if (got !== cid) throw new IntegrityError(`bytes from ${from} hash to ${got}, not ${cid}`)
      return filled
    }
    return await eachGateway(this.gateways, cid, options.signal, async (gateway, tried) => {
      let tooLarge = false
      try {
        const { request, stream, total } = await this.openFile(gateway, cid, options, maxBytes, () => { tooLarge = true })
        let filled: Uint8Array[]
        try {
          filled = await fillSlabs(stream as AsyncIterable<Uint8Array>, maxBytes, slab, (received) => { options.onProgress?.(received, total) })
        } catch (err) {
          if (!(err instanceof TooLarge)) throw err
          stream.destroy()
          tooLarge = true
          throw tooLargeError(gateway.context(request), maxBytes)
        }
        return await verified(filled, gateway.url({ path: `/ipfs/${cid}` }).origin)
      } catch (err) {
        if (options.maxBytes !== undefined && tooLarge) tried.wrongBytes = true
        throw err
      }
    })
  }

  /**
   * `/ipfs/<cid>` from one gateway, refused unread when it announces more than `maxBytes`
   * (`onTooLarge` told first, so the caller can count it against the gateway).
   */
  private async openFile (gateway: HttpClient, cid: string, options: FetchOptions, maxBytes: number, onTooLarge: () => void): Promise<{ request: Parameters<HttpClient['send']>[0], stream: Readable, total: number | undefined }> {
    const request = { method: 'GET' as const, path: `/ipfs/${cid}`, auth: false, signal: options.signal, headers: { accept: 'application/octet-stream' }, deadlineMs: options.deadlineMs ?? FETCH_DEADLINE_MS }
    const { stream, total } = await this.fileBody(gateway, request, cid)
    if (total !== undefined && total > maxBytes) {
      // Destroyed unread: its abort must not surface as an error nothing handles.
      stream.on('error', () => {})
      stream.destroy()
      onTooLarge()
      throw tooLargeError(gateway.context(request), maxBytes, total)
    }
    return { request, stream, total }
  }

  /** The file's bytes from one gateway: the whole file, or its verified raw blocks from a trustless-only gateway. */
  private async fileBody (gateway: HttpClient, request: Parameters<HttpClient['send']>[0], cid: string): Promise<{ stream: Readable, total: number | undefined }> {
    try {
      const response = await gateway.send(request)
      return { stream: response.body, total: announcedLength(response.headers) }
    } catch (err) {
      if (!(err instanceof RemoteStatusError) || !TRUSTLESS_ONLY.has(err.status)) throw err
      return { stream: Readable.from(verifiedFileBytes(gateway, CID.parse(cid), { signal: request.signal, deadlineMs: request.deadlineMs })), total: undefined }
    }
  }

  /** An object's UnixFS blocks rebuilt from its bytes as they stream, root checked at the end: see {@link fetchBlocks}. */
  async fetchBlocks (cid: string, profile: CidProfile, sink: BlockSink, options: RebuildFetchOptions = {}): Promise<{ size: number, blocks: number }> {
    return await fetchBlocks(this.gateways, cid, profile, sink, { ...options, maxBytes: options.maxBytes ?? this.maxBytes })
  }

  /** What an IPNS name points to, from its newest signed record (see {@link resolveName}). */
  async resolveName (ipnsId: string, options: CallOptions = {}): Promise<ResolvedName> {
    return await resolveName(this.gateways, ipnsId, options)
  }

  /**
   * The bytes an IPNS name points to: the name resolved through its signed record, then the CID's
   * bytes from the first gateway that answers. Those are checked against the CID when it is one
   * raw block; a file's are not (no profile to rebuild its CID under: {@link fetchVerified} is).
   */
  async fetchName (ipnsId: string, options: CallOptions = {}): Promise<Buffer> {
    const { cid } = await this.resolveName(ipnsId, options)
    const failures: string[] = []
    for (const gateway of this.gateways) {
      try {
        const request = { method: 'GET' as const, path: `/ipfs/${cid}`, auth: false, signal: options.signal }
        const response = await gateway.send(request)
        const bytes = await readBounded(response.body, response.headers, gateway.context(request), ANSWER_LIMITS.resolved)
        await checkRawBlock(cid, bytes)
        return bytes
      } catch (err) {
        options.signal?.throwIfAborted()
        failures.push((err as Error).message)
      }
    }
    throw new NameResolveError(`${ipnsId.slice(0, 100)} points at ${cid}, which no gateway gave: ${failures.join('; ')}`)
  }
}

/** Throws unless `bytes` hash to `cid`, when the CID is a raw block under sha2-256. */
async function checkRawBlock (cid: string, bytes: Uint8Array): Promise<void> {
  const parsed = CID.parse(cid)
  if (parsed.code !== raw.code || parsed.multihash.code !== sha256.code) return
  const digest = await sha256.digest(bytes)
  if (!Buffer.from(digest.bytes).equals(Buffer.from(parsed.multihash.bytes))) throw new IntegrityError(`the bytes a gateway gave for ${cid} do not hash to it: they were refused`)
}
