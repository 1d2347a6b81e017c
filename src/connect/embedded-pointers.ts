import { PointerNotFoundError } from '../errors.js'
import { pointerRecord, type PointerRow } from '../local-service/reads/index.js'
import { checkedCid, pointerAnswerSchema, type ServicePointers } from '../remote/index.js'

/** The embedded service's pointers as this process reads (and, once started, writes) them. */
export interface PointerRows {
  /**
   * The account's row for the pair. Null where none was put, and the route would answer so;
   * undefined where this process cannot say (none read, its user not known yet, a service stopping).
   */
  readonly row: (namespace: string, network: string) => PointerRow | null | undefined
  /** Writes the account's pointer as the route does; false where it would not (asked over HTTP then). */
  readonly put?: (input: object) => boolean
}

/**
 * The embedded service's pointer in this process, without HTTP: its client, and the undici pool
 * under it, stay unloaded. Only what the route would answer the same is answered here: a pointer
 * found and well formed, a put the route takes, and none put where the service runs here. Anything
 * else (a malformed row, a put it refuses) goes to `http`, which answers and fails as it always did.
 */
export function pointersInProcess (rows: PointerRows, http: () => Promise<ServicePointers>): ServicePointers {
  return {
    current: async (namespace, network, options) => {
      options?.signal?.throwIfAborted()
      const row = namespace === '' || network === '' ? undefined : rows.row(namespace, network)
      if (row === null) throw new PointerNotFoundError(namespace, network)
      const parsed = row === undefined ? undefined : pointerAnswerSchema.safeParse({ pointer: pointerRecord(row) })
      // A name the database holds otherwise than asked (a lone surrogate) is the route's to answer.
      if (parsed?.success === true && parsed.data.pointer.namespace === namespace && parsed.data.pointer.network === network) return parsed.data.pointer
      return await (await http()).current(namespace, network, options)
    },
    put: async (input, options) => {
      options?.signal?.throwIfAborted()
      // Refused before anything is written, as the client refuses it before sending.
      checkedCid(input.snapshotCid, 'snapshot CID')
      if (rows.put?.(input) === true) return
      await (await http()).put(input, options)
    }
  }
}
