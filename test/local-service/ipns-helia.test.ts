import '../helpers/with-resolvers.js'
import { describe, expect, it, onTestFinished } from 'vitest'
import { base36 } from 'multiformats/bases/base36'
import { CID } from 'multiformats/cid'
import { localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { uploaded } from '../helpers/ipns.js'

/**
 * Names published on the local service, resolved by Helia's own IPNS clients: none of cidsync's
 * code checks what they check (each validates the record's signature against the name).
 */

const quiet = Object.assign(() => {}, { error: () => {}, trace: () => {}, enabled: false, newScope: () => quiet })
const logger = { forComponent: () => quiet }

/** The smallest datastore Helia's IPNS resolver caches records in: a map, gone with the test. */
function memoryDatastore (): unknown {
  const entries = new Map<string, Uint8Array>()
  return {
    has: async (key: { toString: () => string }) => entries.has(key.toString()),
    get: async (key: { toString: () => string }) => {
      const value = entries.get(key.toString())
      if (value === undefined) throw Object.assign(new Error('not found'), { name: 'NotFoundError' })
      return value
    },
    put: async (key: { toString: () => string }, value: Uint8Array) => { entries.set(key.toString(), value); return key },
    delete: async (key: { toString: () => string }) => { entries.delete(key.toString()) },
    batch: () => {
      const steps: Array<() => void> = []
      return {
        put: (key: { toString: () => string }, value: Uint8Array) => { steps.push(() => entries.set(key.toString(), value)) },
        delete: (key: { toString: () => string }) => { steps.push(() => entries.delete(key.toString())) },
        commit: async () => { for (const step of steps.splice(0)) step() }
      }
    }
  }
}

/** Every host the test's process fetches from, to hold the clients to loopback. */
function watchHosts (): Set<string> {
  const hosts = new Set<string>()
  const realFetch = globalThis.fetch
  globalThis.fetch = async (input, init) => {
    hosts.add(new URL(input instanceof Request ? input.url : input.toString()).host)
    return await realFetch(input, init)
  }
  onTestFinished(() => { globalThis.fetch = realFetch })
  return hosts
}

describe('IPNS names of the local service, resolved by independent clients', () => {
  it('Helia\'s delegated routing client and IPNS resolver resolve a name, and follow it when it moves', async () => {
    const { clients, local } = await localServiceUnderTest()
    const dir = await useTempDir()
    const first = await uploaded(clients, dir, 'one.txt', 'first')
    const second = await uploaded(clients, dir, 'two.txt', 'second')
    const key = await clients.names.create()
    await clients.names.publish(key.ipnsName, first)
    const hosts = watchHosts()
    const name = CID.parse(key.ipnsId, base36) as CID<unknown, 0x72, 0x00, 1>

    const { createDelegatedRoutingV1HttpApiClient } = await import('@helia/delegated-routing-v1-http-api-client')
    const client = createDelegatedRoutingV1HttpApiClient(local.url, { cacheTTL: 0 })
    onTestFinished(async () => { await client.stop() })
    // getIPNS validates the record against the name before it answers.
    expect(await client.getIPNS(name)).toMatchObject({ value: `/ipfs/${first}`, sequence: 0n })

    const { ipnsResolver } = await import('@helia/ipns')
    const { delegatedHTTPRouting } = await import('@helia/routers')
    const resolve = async (): Promise<{ cid: string, sequence: bigint }> => {
      // A fresh resolver each time: its cache would keep the first answer for the record's TTL.
      const routing = delegatedHTTPRouting(local.url, { cacheTTL: 0 })
      const resolver = ipnsResolver({ datastore: memoryDatastore(), routing, logger } as unknown as Parameters<typeof ipnsResolver>[0])
      const result = await resolver.resolve(name)
      return { cid: result.cid.toString(), sequence: result.record.sequence }
    }
    expect(await resolve()).toEqual({ cid: first, sequence: 0n })
    await clients.names.publish(key.ipnsName, second)
    expect(await resolve()).toEqual({ cid: second, sequence: 1n })
    expect([...hosts]).toEqual([new URL(local.url).host])
  })

  it('@helia/verified-fetch fetches ipns://<name> through the service as its gateway and router', async () => {
    const { clients, local } = await localServiceUnderTest()
    const dir = await useTempDir()
    const cid = await uploaded(clients, dir, 'hello.txt', 'hello from a name')
    const key = await clients.names.create()
    await clients.names.publish(key.ipnsName, cid)
    const hosts = watchHosts()

    const { createVerifiedFetch } = await import('@helia/verified-fetch')
    const { createDelegatedRoutingV1HttpApiClient } = await import('@helia/delegated-routing-v1-http-api-client')
    const verifiedFetch = await createVerifiedFetch({
      gateways: [local.url],
      allowInsecure: true,
      allowLocal: true,
      // Its libp2p node listens nowhere, dials nothing and looks for no peers (no DHT, no UPnP):
      // its one router is the service's delegated routing, named here instead of by `routers`.
      libp2pConfig: {
        addresses: { listen: [] },
        transports: [],
        peerDiscovery: [],
        services: { delegatedRouting: () => createDelegatedRoutingV1HttpApiClient(local.url, { cacheTTL: 0 }) }
      }
    })
    onTestFinished(async () => { await verifiedFetch.stop() })
    const answer = await verifiedFetch(`ipns://${key.ipnsId}`, { signal: AbortSignal.timeout(60_000) })
    expect(answer.status).toBe(200)
    expect(await answer.text()).toBe('hello from a name')
    // And the signed record itself, which it checks against the name before it answers.
    const record = await verifiedFetch(`ipns://${key.ipnsId}`, { headers: { accept: 'application/vnd.ipfs.ipns-record' }, signal: AbortSignal.timeout(60_000) })
    expect(record.status).toBe(200)
    expect(record.headers.get('content-type')).toBe('application/vnd.ipfs.ipns-record')
    expect(local.requestLog().some(r => r.route === 'routing_ipns_get' && r.status === 200)).toBe(true)
    expect([...hosts]).toEqual([new URL(local.url).host])
  })
})
