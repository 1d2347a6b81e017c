import { existsSync } from 'node:fs'
import type { Config } from '../config/index.js'
import { indexPath, openIndex, readDeviceId } from '../index/index.js'
import type { ServiceClients } from '../remote/index.js'

/** What the deal step did: deals asked, and objects skipped because they already had one. */
export interface ImportDeals { readonly asked: number, readonly skipped: number }

/**
 * Asks a deal for each object that has none yet. An import run again (after a failure, a kill,
 * or on purpose) would otherwise ask again for every object: an object this device's index
 * already asked for (made, or pending within its bound) or the service lists deals for is
 * skipped, counted. An overdue request is asked again. Deals asked, and deals found on the
 * service, are recorded in the index when there is one, so the daemon's follow-up covers them as
 * it does a publish's.
 */
export async function askDeals (clients: ServiceClients, config: Config, objects: readonly string[], signal: AbortSignal | undefined): Promise<ImportDeals> {
  const index = existsSync(indexPath(config.stateDir)) ? openIndex(indexPath(config.stateDir)) : undefined
  const deviceId = readDeviceId(config.stateDir)
  let asked = 0
  let skipped = 0
  try {
    for (const object of objects) {
      const here = index?.remote.dealState(object) ?? 'none'
      if (here === 'made' || here === 'pending' || await hasDeals(clients, object, signal)) {
        if (here === 'none' && index !== undefined && deviceId !== undefined) index.remote.requestDeal(object, deviceId)
        skipped++
        continue
      }
      await clients.deals.addCid(object, { signal })
      if (index !== undefined && deviceId !== undefined) index.remote.requestDeal(object, deviceId)
      asked++
    }
  } finally {
    index?.close()
  }
  return { asked, skipped }
}

/**
 * Whether the service lists a deal made for `cid` (one with its id, as reconcile counts a deal
 * made): a record without one (an empty, queued or failed request) is no deal, or an import run
 * again would skip that object for good. A failure to say is no (the deal is asked, which fails or
 * goes through on its own).
 */
async function hasDeals (clients: ServiceClients, cid: string, signal: AbortSignal | undefined): Promise<boolean> {
  try {
    return (await clients.deals.dealStatus(cid, { signal })).some(deal => deal.dealId !== undefined)
  } catch (err) {
    if (signal?.aborted === true) throw err
    return false
  }
}
