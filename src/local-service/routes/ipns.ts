import type { ServerResponse } from 'node:http'
import { CID } from 'multiformats/cid'
import { requireParam, sendJson, type Route } from '../http.js'
import { newIpnsKey } from '../ipns-key.js'
import { IpnsRecords } from '../ipns-records.js'
import type { ServiceParts } from '../parts.js'

/** How production answers any IPNS failure: an unknown key, a bad CID, a key already removed. */
export const IPNS_FAILURE = { error: [{ message: 'Something went wrong.' }] }

function failLikeProduction (res: ServerResponse): void {
  sendJson(res, 500, IPNS_FAILURE)
}

function validCid (text: string): string | undefined {
  try {
    return CID.parse(text).toString()
  } catch {
    return undefined
  }
}

interface KeyRow { ipns_name: string, ipns_id: string, address: string, cid: string, last_update: number }

/**
 * IPNS names: generate, publish (a new signed record; rebinding keeps the id), list, remove
 * (DELETE, or GET as the spec lists).
 */
export function ipnsRoutes (parts: ServiceParts): Route[] {
  const records = new IpnsRecords(parts.db, parts.now)
  const insert = parts.db.prepare('INSERT INTO ipns_keys (ipns_name, ipns_id, address, private_key, last_update) VALUES (?, ?, ?, ?, ?)')
  const find = parts.db.prepare('SELECT * FROM ipns_keys WHERE ipns_name = ? AND address = ?')
  const list = parts.db.prepare('SELECT * FROM ipns_keys WHERE address = ? ORDER BY last_update DESC, ipns_name')
  const remove = parts.db.prepare('DELETE FROM ipns_keys WHERE ipns_name = ? AND address = ?')
  const ownKey = (name: string, address: string): KeyRow | undefined => find.get(name, address) as KeyRow | undefined
  return [{
    name: 'generate_key',
    methods: ['GET'],
    path: '/api/ipns/generate_key',
    auth: 'api-key',
    handle: ({ res, caller }) => {
      parts.limits.checkNewIpnsKey(caller.address)
      const key = newIpnsKey()
      insert.run(key.ipnsName, key.ipnsId, caller.address, key.privateKey, Date.now())
      sendJson(res, 200, { ipnsName: key.ipnsName, ipnsId: key.ipnsId })
    }
  }, {
    name: 'publish_record',
    methods: ['GET'],
    path: '/api/ipns/publish_record',
    auth: 'api-key',
    handle: async ({ url, res, caller }) => {
      const cid = validCid(requireParam(url, 'cid'))
      const keyName = requireParam(url, 'keyName')
      const published = cid === undefined ? undefined : await records.publish(keyName, caller.address, cid)
      if (cid === undefined || published === undefined) { failLikeProduction(res); return }
      sendJson(res, 200, { Name: published.ipnsId, Value: `/ipfs/${cid}` })
    }
  }, {
    name: 'get_ipns_records',
    methods: ['GET'],
    path: '/api/ipns/get_ipns_records',
    auth: 'api-key',
    handle: ({ res, caller }) => {
      sendJson(res, 200, (list.all(caller.address) as KeyRow[]).map(k => ({
        ipnsName: k.ipns_name, ipnsId: k.ipns_id, publicKey: k.address, cid: k.cid, lastUpdate: k.last_update
      })))
    }
  }, {
    name: 'remove_key',
    methods: ['DELETE', 'GET'],
    path: '/api/ipns/remove_key',
    auth: 'api-key',
    handle: ({ url, res, caller }) => {
      const key = ownKey(requireParam(url, 'keyName'), caller.address)
      if (key === undefined) { failLikeProduction(res); return }
      remove.run(key.ipns_name, caller.address)
      sendJson(res, 200, { Keys: [{ Name: key.ipns_name, Id: key.ipns_id }] })
    }
  }]
}
