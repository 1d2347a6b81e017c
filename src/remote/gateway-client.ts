import { createWriteStream } from 'node:fs'
import { rename, rm } from 'node:fs/promises'
import { fsyncPath } from '../util/fsync.js'
import { dirname } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { Transform } from 'node:stream'
import { CidBuilder, type CidProfile } from '../content/index.js'
import { CidsyncError, ContentNotFoundError, IntegrityError, RemoteNotFoundError } from '../errors.js'
import type { HttpClient } from './http-client.js'
import type { CallOptions } from './deals-client.js'

export interface FetchOptions extends CallOptions {
  readonly onProgress?: (received: number, total: number | undefined) => void
}

/**
 * Fetches `/ipfs/<cid>` through the gateways in order. The bytes go to a temp file while their
 * CID is recomputed under the profile they were made with; only bytes that hash to the CID are
 * renamed into place. Trustless formats are never relied on.
 */
export class GatewayClient {
  constructor (private readonly gateways: readonly HttpClient[]) {}

  async fetchVerified (cid: string, profile: CidProfile, destination: string, options: FetchOptions = {}): Promise<{ size: number, gateway: string }> {
    const failures: string[] = []
    let integrity = false
    let notFound = 0
    for (const gateway of this.gateways) {
      const temp = `${destination}.${process.pid}.part`
      try {
        const response = await gateway.send({ method: 'GET', path: `/ipfs/${cid}`, auth: false, signal: options.signal, headers: { accept: 'application/octet-stream' } })
        const total = Number(response.headers['content-length'] ?? NaN)
        const builder = new CidBuilder(profile)
        let received = 0
        const hasher = new Transform({
          transform (chunk: Buffer, _encoding, done) {
            builder.update(chunk)
            received += chunk.byteLength
            options.onProgress?.(received, Number.isNaN(total) ? undefined : total)
            done(null, chunk)
          }
        })
        await pipeline(response.body, hasher, createWriteStream(temp), { signal: options.signal })
        const got = builder.finish().toString()
        if (got !== cid) {
          integrity = true
          throw new IntegrityError(`bytes from ${gateway.url({ path: `/ipfs/${cid}` }).origin} hash to ${got}, not ${cid}`)
        }
        await fsyncPath(temp)
        await rename(temp, destination)
        await fsyncPath(dirname(destination))
        return { size: received, gateway: gateway.url({ path: '' }).origin }
      } catch (err) {
        await rm(temp, { force: true })
        if (options.signal?.aborted === true) throw err
        if (err instanceof RemoteNotFoundError) notFound++
        failures.push((err as Error).message)
      }
    }
    const summary = failures.length === 0 ? 'no gateway is configured: set [service] gateways' : failures.join('; ')
    if (integrity) throw new IntegrityError(`no gateway gave the bytes of ${cid}: ${summary}`)
    if (notFound > 0 && notFound === this.gateways.length) throw new ContentNotFoundError(`no gateway has ${cid} (each answered 404)`)
    throw new CidsyncError(`could not fetch ${cid}: ${summary}`)
  }

  /** What an IPNS name resolves to, through the first gateway that answers (bytes are not verifiable). */
  async fetchName (ipnsId: string, options: CallOptions = {}): Promise<Buffer> {
    const failures: string[] = []
    for (const gateway of this.gateways) {
      try {
        const response = await gateway.send({ method: 'GET', path: `/ipns/${ipnsId}/`, auth: false, signal: options.signal })
        return Buffer.from(await response.body.arrayBuffer())
      } catch (err) {
        failures.push((err as Error).message)
      }
    }
    throw new CidsyncError(`could not resolve ${ipnsId}: ${failures.join('; ') || 'no gateway is configured'}`)
  }
}
