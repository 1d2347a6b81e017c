import { z } from 'zod'
import { NameNotFoundError, RemoteNetworkError, RemoteStatusError } from '../errors.js'
import type { HttpClient, HttpRequest } from './http-client.js'
import { ANSWER_LIMITS } from './body.js'
import { isRetryableStatus } from './retry.js'
import { checkedCid } from './cid-text.js'
import { ipnsKeySchema, ipnsRecordSchema, publishSchema, removeKeySchema } from './schemas.js'
import type { CallOptions } from './deals-client.js'
import type { NameRegistry } from '../store/index.js'

/** IPNS names on the main API: make a key, bind it to a CID (again and again), list, remove. */
export class NamesClient implements NameRegistry {
  constructor (private readonly api: HttpClient) {}

  async create (options: CallOptions = {}): Promise<z.output<typeof ipnsKeySchema>> {
    return await this.api.json({ method: 'GET', path: '/api/ipns/generate_key', retry: false, signal: options.signal }, ipnsKeySchema)
  }

  /** Binds a key to a CID; a key the account lacks is a {@link NameNotFoundError} (exit 3). */
  async publish (keyName: string, cid: string, options: CallOptions = {}): Promise<{ ipnsId: string, value: string }> {
    const request = { method: 'GET', path: '/api/ipns/publish_record', query: { cid: checkedCid(cid), keyName }, signal: options.signal } as const
    const answer = await this.diagnosed(request, keyName, publishSchema, options)
    return { ipnsId: answer.Name, value: answer.Value }
  }

  async list (options: CallOptions = {}): Promise<Array<z.output<typeof ipnsRecordSchema>>> {
    return await this.api.json({ method: 'GET', path: '/api/ipns/get_ipns_records', maxBytes: ANSWER_LIMITS.listing, signal: options.signal }, z.array(ipnsRecordSchema))
  }

  /** Removes a key. The official SDKs send DELETE, which is what this does. */
  async remove (keyName: string, options: CallOptions = {}): Promise<Array<{ name: string, id: string }>> {
    const request = { method: 'DELETE', path: '/api/ipns/remove_key', query: { keyName }, signal: options.signal } as const
    const answer = await this.diagnosed(request, keyName, removeKeySchema, options)
    return answer.Keys.map(k => ({ name: k.Name, id: k.Id }))
  }

  /**
   * Production answers every IPNS failure, an unknown key included, with 500 (or 400, 404) and
   * "Something went wrong.". Retrying that four times and saying "try again later" is wrong when
   * the key does not exist, so one attempt is made, then the key list says which it was: an
   * unknown key, or a real failure, which gets the usual retries.
   */
  private async diagnosed<S extends z.ZodType> (request: HttpRequest, keyName: string, schema: S, options: CallOptions): Promise<z.output<S>> {
    try {
      return await this.api.json({ ...request, retry: false }, schema)
    } catch (err) {
      const status = err instanceof RemoteStatusError ? err.status : undefined
      if (status === 400 || status === 404 || (status !== undefined && status >= 500)) {
        const keys = await this.list(options)
        if (!keys.some(k => k.ipnsName === keyName)) throw new NameNotFoundError(keyName, { cause: err }, keys.find(k => k.ipnsId === keyName)?.ipnsName)
        if (status !== undefined && status < 500) throw err
      } else if (!(err instanceof RemoteNetworkError) && !(status !== undefined && isRetryableStatus(status))) {
        throw err
      }
    }
    return await this.api.json(request, schema)
  }
}
