import { z } from 'zod'
import type { HttpClient } from './http-client.js'
import { ipnsKeySchema, ipnsRecordSchema, publishSchema, removeKeySchema } from './schemas.js'
import type { CallOptions } from './deals-client.js'

/** IPNS names on the main API: make a key, bind it to a CID (again and again), list, remove. */
export class NamesClient {
  constructor (private readonly api: HttpClient) {}

  async create (options: CallOptions = {}): Promise<z.output<typeof ipnsKeySchema>> {
    return await this.api.json({ method: 'GET', path: '/api/ipns/generate_key', retry: false, signal: options.signal }, ipnsKeySchema)
  }

  async publish (keyName: string, cid: string, options: CallOptions = {}): Promise<{ ipnsId: string, value: string }> {
    const answer = await this.api.json({ method: 'GET', path: '/api/ipns/publish_record', query: { cid, keyName }, signal: options.signal }, publishSchema)
    return { ipnsId: answer.Name, value: answer.Value }
  }

  async list (options: CallOptions = {}): Promise<Array<z.output<typeof ipnsRecordSchema>>> {
    return await this.api.json({ method: 'GET', path: '/api/ipns/get_ipns_records', signal: options.signal }, z.array(ipnsRecordSchema))
  }

  /** Removes a key. The official SDKs send DELETE, which is what this does. */
  async remove (keyName: string, options: CallOptions = {}): Promise<Array<{ name: string, id: string }>> {
    const answer = await this.api.json({ method: 'DELETE', path: '/api/ipns/remove_key', query: { keyName }, signal: options.signal }, removeKeySchema)
    return answer.Keys.map(k => ({ name: k.Name, id: k.Id }))
  }
}
