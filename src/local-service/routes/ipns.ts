import type { ServerResponse } from 'node:http'
import { CID } from 'multiformats/cid'
import { requireParam, sendJson, type Route } from '../http.js'
import { newIpnsKey } from '../ipns-key.js'
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

/** IPNS names: generate, publish (rebinding keeps the id), list, remove (DELETE, or GET as the spec lists). */
export function ipnsRoutes (parts: ServiceParts): Route[] {
  const insert = parts.db.prepare('INSERT INTO ipns_keys (ipns_name, ipns_id, address, private_key, last_update) VALUES (?, ?, ?, ?, ?)')
  const find = parts.db.prepare('SELECT * FROM ipns_keys WHERE ipns_name = ? AND address = ?')
  const bind = parts.db.prepare('UPDATE ipns_keys SET cid = ?, last_update = ? WHERE ipns_name = ? AND address = ?')
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
    handle: ({ url, res, caller }) => {
      const cid = validCid(requireParam(url, 'cid'))
      const key = ownKey(requireParam(url, 'keyName'), caller.address)
      if (cid === undefined || key === undefined) { failLikeProduction(res); return }
      bind.run(cid, Date.now(), key.ipns_name, caller.address)
      sendJson(res, 200, { Name: key.ipns_id, Value: `/ipfs/${cid}` })
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

/** The CID an IPNS id points to and when it was bound (ms), for the gateway; undefined when unknown or unbound. */
export function resolveIpns (parts: ServiceParts, ipnsId: string): { cid: string, lastUpdate: number } | undefined {
  const row = parts.db.prepare("SELECT cid, last_update FROM ipns_keys WHERE ipns_id = ? AND cid != ''").get(ipnsId) as { cid: string, last_update: number } | undefined
  return row === undefined ? undefined : { cid: row.cid, lastUpdate: row.last_update }
}
