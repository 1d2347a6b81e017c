import { describe, expect, it, onTestFinished } from 'vitest'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { createIPNSRecord, marshalIPNSRecord } from 'ipns'
import { IpnsRecordInvalidError, NameResolveError } from '../../src/errors.js'
import { GatewayClient, HttpClient } from '../../src/remote/index.js'
import { localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { fetchBytes } from '../helpers/trustless.js'
import { uploaded } from '../helpers/ipns.js'

/** A gateway that answers every request with `body` (a record, forged or replayed, or anything else). */
async function gatewayAnswering (status: number, body: Uint8Array): Promise<string> {
  const server = createServer((req, res) => {
    req.resume()
    res.writeHead(status, { 'content-type': 'application/vnd.ipfs.ipns-record', 'content-length': body.byteLength })
    res.end(body)
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  onTestFinished(async () => { await new Promise(resolve => server.close(resolve)) })
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

function gatewaysAt (...urls: string[]): GatewayClient {
  const clients = urls.map(baseUrl => new HttpClient({ service: 'gateway', baseUrl, retry: { attempts: 1 } }))
  onTestFinished(async () => { for (const c of clients) await c.close() })
  return new GatewayClient(clients)
}

describe('resolving an IPNS name', () => {
  it('believes only a record signed by the name\'s key, and the newest any gateway gives', async () => {
    const { clients, local } = await localServiceUnderTest()
    const dir = await useTempDir()
    const first = await uploaded(clients, dir, 'one.txt', 'first')
    const second = await uploaded(clients, dir, 'two.txt', 'second')
    const key = await clients.names.create()
    await clients.names.publish(key.ipnsName, first)
    const older = (await fetchBytes(local.url, `/routing/v1/ipns/${key.ipnsId}`)).body
    await clients.names.publish(key.ipnsName, second)

    expect(await clients.gateway.resolveName(key.ipnsId)).toMatchObject({ cid: second, sequence: 1n, value: `/ipfs/${second}` })
    expect((await clients.gateway.fetchName(key.ipnsId)).toString()).toBe('second')

    // A record for this name signed by another key, one that is no record at all, and an older one.
    const other = await generateKeyPair('Ed25519')
    const forged = await gatewayAnswering(200, marshalIPNSRecord(await createIPNSRecord(other, `/ipfs/${first}`, 5n, 60_000)))
    const unsigned = await gatewayAnswering(200, Buffer.from(`/ipfs/${first}`))
    const replaying = await gatewayAnswering(200, older)
    const missing = await gatewayAnswering(404, Buffer.from('{"error":"no record"}'))
    for (const liar of [forged, unsigned]) {
      const refused = await gatewaysAt(liar).resolveName(key.ipnsId).catch((err: unknown) => err)
      expect(refused, liar).toBeInstanceOf(IpnsRecordInvalidError)
      expect((refused as IpnsRecordInvalidError).exitCode).toBe(4)
      await expect(gatewaysAt(liar).fetchName(key.ipnsId)).rejects.toBeInstanceOf(IpnsRecordInvalidError)
    }
    await expect(gatewaysAt(missing).resolveName(key.ipnsId)).rejects.toBeInstanceOf(NameResolveError)
    // A valid record set back one publish: believed alone, never over the newer one, whichever is asked first.
    expect(await gatewaysAt(replaying).resolveName(key.ipnsId)).toMatchObject({ cid: first, sequence: 0n })
    expect(await gatewaysAt(replaying, forged, local.url).resolveName(key.ipnsId)).toMatchObject({ cid: second, sequence: 1n, gateway: local.url })
    expect(await gatewaysAt(local.url, replaying).resolveName(key.ipnsId)).toMatchObject({ cid: second, sequence: 1n })
    expect((await gatewaysAt(forged, unsigned, local.url).fetchName(key.ipnsId)).toString()).toBe('second')
  })
})
