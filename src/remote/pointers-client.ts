import { PointerNotFoundError, RemoteNotFoundError } from '../errors.js'
import type { HttpClient } from './http-client.js'
import { checkedCid } from './cid-text.js'
import { pointerAnswerSchema, type Pointer } from './schemas.js'
import type { CallOptions } from './deals-client.js'

export interface PointerInput {
  readonly snapshotCid: string
  readonly engine: string
  readonly namespace: string
  readonly network: string
  readonly memories?: number
}

/** The pointer service: the latest snapshot CID per namespace and network. PUT overwrites. */
export class PointersClient {
  constructor (private readonly pointer: HttpClient) {}

  /** Overwrites the pointer; a snapshot CID that is not a CID is refused before sending (exit 2). */
  async put (input: PointerInput, options: CallOptions = {}): Promise<void> {
    checkedCid(input.snapshotCid, 'snapshot CID')
    const response = await this.pointer.send({ method: 'PUT', path: '/v1/pointers', json: input, signal: options.signal })
    await response.body.dump()
  }

  /** The pointer stored for the pair; a {@link PointerNotFoundError} (exit 3) when there is none. */
  async current (namespace: string, network: string, options: CallOptions = {}): Promise<Pointer> {
    try {
      const answer = await this.pointer.json({ method: 'GET', path: '/v1/pointers/current', query: { namespace, network }, signal: options.signal }, pointerAnswerSchema)
      return answer.pointer
    } catch (err) {
      if (err instanceof RemoteNotFoundError) throw new PointerNotFoundError(namespace, network, { cause: err })
      throw err
    }
  }
}
