import type { IncomingMessage } from 'node:http'
import { IPNS_RECORD_TYPE, MAX_IPNS_RECORD_BYTES, parseIpnsName, type IpnsName } from '../../crypto/index.js'
import { HttpFailure, type Route } from '../http.js'
import { IpnsRecords } from '../ipns-records.js'
import type { ServiceParts } from '../parts.js'
import { acceptsIpnsRecord, DEFAULT_RECORD_MAX_AGE, sendIpnsRecord } from './ipns-record-answer.js'

/** Any page may read a record: it is signed, and public as the gateway is (the spec's CORS). */
const READ_CORS = { 'access-control-allow-origin': '*' }

function nameOf (text: string): IpnsName {
  const name = parseIpnsName(text)
  if (name === undefined) throw new HttpFailure(400, `${text.slice(0, 80)} is not an IPNS name: give a libp2p-key CID (k51..., bafz...) or a peer id (12D3Koo...)`)
  return name
}

/** The body of a PUT, refused past the largest record the spec allows. */
async function recordBody (req: IncomingMessage): Promise<Uint8Array> {
  const announced = Number(req.headers['content-length'] ?? 0)
  if (announced > MAX_IPNS_RECORD_BYTES) throw new HttpFailure(413, `an IPNS record is at most ${MAX_IPNS_RECORD_BYTES} bytes`)
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req) {
    size += (chunk as Buffer).byteLength
    if (size > MAX_IPNS_RECORD_BYTES) throw new HttpFailure(413, `an IPNS record is at most ${MAX_IPNS_RECORD_BYTES} bytes`)
    chunks.push(chunk as Buffer)
  }
  return Buffer.concat(chunks)
}

/**
 * The IPNS part of the Delegated Routing V1 HTTP API: `GET /routing/v1/ipns/{name}` answers the
 * signed record of a name held here (404 when there is none); `PUT` takes a record for such a
 * name, checked first: signed by the name's key, not expired, newer than the one held.
 */
export function routingIpnsRoutes (parts: ServiceParts): Route[] {
  const records = new IpnsRecords(parts.db, parts.now)
  const path = /^\/routing\/v1\/ipns\/([^/?]+)$/
  return [{
    name: 'routing_ipns_get',
    methods: ['GET', 'HEAD'],
    path,
    auth: 'none',
    handle: async ({ req, res, params }) => {
      const name = nameOf(params[0] as string)
      if (!acceptsIpnsRecord(req.headers.accept)) throw new HttpFailure(406, `ask with Accept: ${IPNS_RECORD_TYPE}`)
      const record = await records.current(name)
      if (record === undefined) throw new HttpFailure(404, `no record for ${name.text} here`, { 'cache-control': `public, max-age=${DEFAULT_RECORD_MAX_AGE}`, ...READ_CORS })
      sendIpnsRecord(req, res, record, READ_CORS)
    }
  }, {
    name: 'routing_ipns_put',
    methods: ['PUT'],
    path,
    auth: 'none',
    handle: async ({ req, res, params }) => {
      const name = nameOf(params[0] as string)
      const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase()
      if (type !== IPNS_RECORD_TYPE) throw new HttpFailure(406, `send the record with Content-Type: ${IPNS_RECORD_TYPE}`)
      await records.accept(name, await recordBody(req))
      res.writeHead(200, { 'content-length': '0' })
      res.end()
    }
  }]
}
