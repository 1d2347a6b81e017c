import { sendJson, requireParam, type Route } from '../http.js'
import { parseCid, type ServiceParts } from '../parts.js'
import { epochAt } from '../../remote/index.js'

interface DealRow { address: string, cid: string, requested_at: number, active_at: number, deal_id: number, miner: string }

const LOCAL_MINER = 'f0localminer'
const DEAL_EPOCHS = 1_555_200

/** A deal as production's `deal_status` now names its fields. */
function currentDeal (d: DealRow): Record<string, unknown> {
  const startEpoch = epochAt(d.active_at)
  return {
    DealID: d.deal_id,
    Provider: d.miner,
    chainDealID: d.deal_id,
    pieceCID: pieceCid(d.cid),
    aggregateIn: `baga6ea4seaqa${d.cid.slice(-39)}`,
    dealStatus: 'Active',
    startEpoch,
    endEpoch: startEpoch + DEAL_EPOCHS,
    lastUpdate: d.active_at
  }
}

/** The older names (`dealId`, `miner`, `storageProvider`), served under the `legacyDealFields` fault. */
function legacyDeal (d: DealRow): Record<string, unknown> {
  const startEpoch = epochAt(d.active_at)
  return {
    payloadCid: d.cid,
    pieceCID: pieceCid(d.cid),
    dealId: d.deal_id,
    miner: d.miner,
    storageProvider: d.miner,
    dealStatus: 'Active',
    startEpoch,
    endEpoch: startEpoch + DEAL_EPOCHS,
    lastUpdate: d.active_at
  }
}

const pieceCid = (cid: string): string => `baga6ea4seaq${cid.slice(-40)}`

/**
 * Storage deals: `add_cid` records the request and marks the owner's upload sent for deal; the
 * deal turns up in `deal_status` after `dealDelayMs` (production: up to two days). `deal_status`
 * answers anyone, as production does (its SDK sends no key): every account's deals for the CID. A
 * caller who sends its key gets its own deals only.
 */
export function dealRoutes (parts: ServiceParts): Route[] {
  const request = parts.db.prepare(`INSERT INTO deals (address, cid, requested_at, active_at, deal_id, miner) VALUES (?, ?, ?, ?, ?, ?)
    ON CONFLICT (address, cid) DO NOTHING`)
  const markSent = parts.db.prepare("UPDATE files SET sent_for_deal = 'yes', last_update = ? WHERE address = ? AND cid = ?")
  const nextDealId = parts.db.prepare('SELECT COALESCE(MAX(deal_id), 1000000) + 1 FROM deals').pluck()
  // A deal names no account, and the gateway already serves the CID's content to anyone who knows it.
  const anyones = parts.db.prepare('SELECT * FROM deals WHERE cid = ? AND active_at <= ? ORDER BY deal_id')
  // A client with a key (cidsync's) asks whether its own request was dealt, not someone else's.
  const callers = parts.db.prepare('SELECT * FROM deals WHERE cid = ? AND address = ? AND active_at <= ? ORDER BY deal_id')
  return [{
    name: 'add_cid',
    methods: ['GET'],
    path: '/api/v1/pin/add_cid',
    auth: 'api-key',
    handle: ({ url, res, caller }) => {
      const cid = parseCid(requireParam(url, 'cid')).toString()
      const now = Date.now()
      parts.db.transaction(() => {
        request.run(caller.address, cid, now, now + parts.dealDelayMs, nextDealId.get() as number, LOCAL_MINER)
        markSent.run(now, caller.address, cid)
      }).immediate()
      sendJson(res, 200, { message: 'cid added for deal', cid })
    }
  }, {
    name: 'deal_status',
    methods: ['GET'],
    path: '/api/lighthouse/deal_status',
    auth: 'api-key-optional',
    handle: ({ url, res, fault, caller }) => {
      const cid = parseCid(requireParam(url, 'cid')).toString()
      const rows = caller.address === '' ? anyones.all(cid, Date.now()) : callers.all(cid, caller.address, Date.now())
      const deals = (rows as DealRow[]).map(d => fault?.legacyDealFields === true ? legacyDeal(d) : currentDeal(d))
      sendJson(res, 200, deals)
    }
  }]
}
