import { describe, expect, it } from 'vitest'
import { pointersInProcess } from '../../src/connect/embedded-pointers.js'
import { MAX_POINTERS_PER_USER } from '../../src/local-service/routes/pointers.js'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'

const CID = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'
const OTHER = 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku'

describe.skipIf(EXTERNAL)('the embedded service\'s pointer in this process', () => {
  it('is read and written without a request, as the route reads and writes it; what the route refuses is asked of it', async () => {
    const service = await localServiceUnderTest()
    const { local, address } = service
    const http = service.clients.pointers
    const pointers = pointersInProcess({ row: (ns, net) => local.pointer(address, ns, net), put: (input) => local.putPointer(address, input) !== undefined }, async () => http)
    const asked = (): number => local.requestLog().filter(r => r.path.startsWith('/v1/pointers')).length

    await pointers.put({ snapshotCid: CID, engine: 'cidsync-sqlite/2', namespace: 'notes', network: 'mainnet', memories: 3 })
    const here = await pointers.current('notes', 'mainnet')
    expect(asked()).toBe(0)
    // The route answers the same pointer, every field.
    expect(await http.current('notes', 'mainnet')).toEqual(here)
    expect(here).toMatchObject({ snapshotCid: CID, engine: 'cidsync-sqlite/2', namespace: 'notes', network: 'mainnet', memories: 3 })

    // None put: missing here, as the route says.
    const routed = asked()
    const missing = await pointers.current('never', 'mainnet').catch((err: Error) => err)
    expect(asked()).toBe(routed)
    const route = await http.current('never', 'mainnet').catch((err: Error) => err)
    expect([(missing as { code?: string }).code, (missing as Error).message]).toEqual([(route as { code?: string }).code, (route as Error).message])
    expect((missing as { code?: string }).code).toBe('ERR_POINTER_NOT_FOUND')
    // An empty name: the route's own answer.
    await expect(pointers.current('', 'mainnet')).rejects.toThrow()
    expect(asked()).toBe(routed + 2)
    // Not a CID: refused before anything is written or sent.
    await expect(pointers.put({ snapshotCid: 'not-a-cid', engine: '', namespace: 'notes', network: 'mainnet' })).rejects.toThrow(/snapshot CID/)
    expect((await pointers.current('notes', 'mainnet')).snapshotCid).toBe(CID)

    // A name that is not whole text (a lone surrogate): answered as the route answers it.
    const odd = 'notes\ud800'
    await pointers.put({ snapshotCid: CID, engine: '', namespace: odd, network: 'mainnet' })
    const oddHere = await pointers.current(odd, 'mainnet').catch((err: { code?: string }) => err.code)
    expect(oddHere).toEqual(await http.current(odd, 'mainnet').catch((err: { code?: string }) => err.code))

    // Past the most pointers a user may hold, the route's own refusal, over HTTP.
    for (let i = 2; i < MAX_POINTERS_PER_USER; i++) local.putPointer(address, { snapshotCid: CID, namespace: `n${i}` })
    const before = asked()
    const refused = await pointers.put({ snapshotCid: OTHER, engine: '', namespace: 'one-too-many', network: 'mainnet' }).catch((err: Error) => err)
    expect(asked()).toBe(before + 1)
    expect(refused).toBeInstanceOf(Error)
    expect((refused as Error).message).toMatch(/1000 pointers/)
    // An existing one is still overwritten in this process.
    await pointers.put({ snapshotCid: OTHER, engine: '', namespace: 'notes', network: 'mainnet' })
    expect((await http.current('notes', 'mainnet')).snapshotCid).toBe(OTHER)
    expect(asked()).toBe(before + 2)
  })
})
