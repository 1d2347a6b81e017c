import { openServiceReads } from '../local-service/reads/index.js'
import type { ServiceClients } from '../remote/index.js'
import { pointersInProcess } from './embedded-pointers.js'
import type { DealRegistry, NameRegistry, ServiceHome } from '../store/index.js'
import { knownAddress, readAccount } from './embedded-account.js'
import { LazyEmbeddedObjects } from './embedded-lazy-store.js'
import { embeddedOptions } from './embedded-options.js'

/** A home and what closes it. */
export interface OpenedHome<H> {
  readonly home: H
  close: () => Promise<void>
}

/**
 * The embedded service in `dir` as a read of the history needs it, not started: its pointer and
 * which uploads its account lists are read from its database in this process. Everything else
 * (a manifest or segment not cached, names, deals) starts it, through `start`, at the first call.
 *
 * Only what the service would answer the same is answered here: the account's own pointer, found
 * and well formed (the same checks as over HTTP). A pointer missing, a name the route refuses or
 * a malformed row is asked of the started service, which answers as it always did. Undefined
 * (start the service as before) when the directory holds no account or database yet, or with the
 * admin routes on, where faults may be set on its routes.
 */
export async function openEmbeddedReads (dir: string, env: NodeJS.ProcessEnv, start: () => Promise<OpenedHome<ServiceClients>>): Promise<OpenedHome<ServiceHome> | undefined> {
  if (embeddedOptions(env).admin) return undefined
  const account = readAccount(dir)
  // The user its session tokens name: the pointer route reads this user's row.
  const user = account === undefined ? undefined : knownAddress(account)
  if (account === undefined || user === undefined || typeof account.apiKey !== 'string') return undefined
  const reads = await openServiceReads(dir)
  if (reads === undefined) return undefined
  let starting: Promise<OpenedHome<ServiceClients>> | undefined
  const started = async (): Promise<ServiceClients> => (await (starting ??= start())).home
  // Read here; a put starts the service, which writes it in its own process or over HTTP.
  const pointers = pointersInProcess({ row: (namespace, network) => reads.pointer(user, namespace, network) }, async () => (await started()).pointers)
  const names: NameRegistry = {
    create: async (options) => await (await started()).names.create(options),
    publish: async (keyName, cid, options) => await (await started()).names.publish(keyName, cid, options),
    list: async (options) => await (await started()).names.list(options)
  }
  const deals: DealRegistry = {
    addCid: async (cid, options) => { await (await started()).deals.addCid(cid, options) },
    dealStatus: async (cid, options) => await (await started()).deals.dealStatus(cid, options)
  }
  const objects = new LazyEmbeddedObjects(async () => (await started()).objects, cids => reads.heldFiles(account.apiKey, cids), `the embedded service (data in ${dir})`)
  return {
    home: { objects, pointers, names, deals },
    close: async () => {
      reads.close()
      // A start that failed was the caller's error already.
      const opened = await starting?.catch(() => undefined)
      await opened?.close()
    }
  }
}
