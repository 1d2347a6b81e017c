import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { request, type ClientRequest } from 'node:http'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import { OPEN_POLICY } from '../../src/local-service/index.js'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { until, within } from '../helpers/wait.js'
import { carOf } from '../helpers/car.js'

type Service = Awaited<ReturnType<typeof localServiceUnderTest>>

const QUOTA = 600 * 1024
const EACH = 400 * 1024
const REQUESTS = 4

async function rawCid (bytes: Uint8Array): Promise<CID> {
  return CID.createV1(0x55, await sha256.digest(bytes))
}

/** A multipart request whose body is all sent but its closing boundary: the service has the part, the request is still open. */
interface Open { readonly cid: CID, readonly req: ClientRequest, readonly status: Promise<number>, readonly answered: () => boolean, readonly finish: () => void }

function openRequest (service: Service, path: string, part: Uint8Array, cid: CID): Open {
  const boundary = `xquota${randomBytes(4).toString('hex')}x`
  const req = request(`${service.local.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${service.apiKey}`, 'content-type': `multipart/form-data; boundary=${boundary}` } })
  const status = new Promise<number>((resolve, reject) => {
    req.on('response', res => { res.resume(); resolve(res.statusCode ?? 0) })
    req.on('error', err => { if ((err as NodeJS.ErrnoException).code === 'ECONNRESET' || (err as NodeJS.ErrnoException).code === 'EPIPE') resolve(413); else reject(err) })
  })
  let answered = false
  void status.then(() => { answered = true })
  req.write(Buffer.concat([Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="x.bin"\r\ncontent-type: application/octet-stream\r\n\r\n`), part]))
  return { cid, req, status, answered: () => answered, finish: () => { if (!answered) req.end(`\r\n--${boundary}--\r\n`) } }
}

async function stored (service: Service, cid: CID): Promise<boolean> {
  return (await fetch(`${service.local.url}/ipfs/${cid.toString()}?format=raw`, { method: 'HEAD' })).status === 200
}

async function listedBytes (service: Service): Promise<number> {
  let total = 0
  for await (const file of service.clients.files()) total += file.fileSizeInBytes
  return total
}

describe.skipIf(EXTERNAL)('local service: an account\'s quota holds against requests running at once', () => {
  it('dag/import: four imports of 400 KiB each, all open at once, store no more than the 600 KiB quota', async () => {
    const service = await localServiceUnderTest({ policy: { ...OPEN_POLICY, maxBytesPerAccount: QUOTA } })
    const open: Open[] = []
    for (let i = 0; i < REQUESTS; i++) {
      const bytes = randomBytes(EACH)
      // The multipart parser holds back a tail that could begin the closing boundary ("\r\n--"):
      // a CAR ending in \r (1 in 256) would leave its block unread until the request ends.
      bytes[EACH - 1] = 0
      const cid = await rawCid(bytes)
      open.push(openRequest(service, '/api/v0/dag/import', await carOf([cid], [{ cid, bytes }]), cid))
    }
    // Each import has read (and stored, unless refused) its block before any of them ends.
    await until(async () => {
      for (const o of open) if (!o.answered() && !(await stored(service, o.cid))) return undefined
      return true
    }, 20_000, 'every import to have read its block')
    for (const o of open) o.finish()
    const statuses = await within(Promise.all(open.map(async o => await o.status)), 20_000, 'the answers')
    expect(statuses.filter(s => s === 200).length, `statuses ${statuses.join(', ')}`).toBeLessThanOrEqual(1)
    expect(await listedBytes(service)).toBeLessThanOrEqual(QUOTA)
  })

  it('add: four uploads of 400 KiB each, all open at once, store no more than the 600 KiB quota', async () => {
    const service = await localServiceUnderTest({ policy: { ...OPEN_POLICY, maxBytesPerAccount: QUOTA } })
    const open: Open[] = []
    for (let i = 0; i < REQUESTS; i++) {
      const bytes = randomBytes(EACH)
      // The first 256 KiB leaf is stored as soon as it arrived (raw leaves): the sign the upload read it.
      const first = await rawCid(bytes.subarray(0, 256 * 1024))
      open.push(openRequest(service, '/api/v0/add?cid-version=1&raw-leaves=true', bytes, first))
    }
    await until(async () => {
      for (const o of open) if (!o.answered() && !(await stored(service, o.cid))) return undefined
      return true
    }, 20_000, 'every upload to have read its first leaf')
    for (const o of open) o.finish()
    const statuses = await within(Promise.all(open.map(async o => await o.status)), 20_000, 'the answers')
    expect(statuses.filter(s => s === 200).length, `statuses ${statuses.join(', ')}`).toBeLessThanOrEqual(1)
    expect(await listedBytes(service)).toBeLessThanOrEqual(QUOTA)
  })
})
