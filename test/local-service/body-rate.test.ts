import { describe, expect, it, onTestFinished } from 'vitest'
import { randomBytes } from 'node:crypto'
import { get, request } from 'node:http'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { until } from '../helpers/wait.js'
import { carOf } from '../helpers/car.js'

type Service = Awaited<ReturnType<typeof localServiceUnderTest>>

/** An import whose body then trickles a byte every half second, as long as the socket lives. */
async function trickle (service: Service): Promise<void> {
  const bytes = randomBytes(64 * 1024)
  const cid = CID.createV1(0x55, await sha256.digest(bytes))
  const car = await carOf([cid], [{ cid, bytes }])
  const boundary = 'xtricklex'
  const req = request(`${service.local.url}/api/v0/dag/import`, { method: 'POST', headers: { authorization: `Bearer ${service.apiKey}`, 'content-type': `multipart/form-data; boundary=${boundary}` } })
  req.on('error', () => {})
  req.on('response', res => { res.resume() })
  // Flushed (connected, head sent) before the next: a connection not yet in a request is the one the cap closes first.
  await new Promise(resolve => req.write(Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="x.car"\r\ncontent-type: application/vnd.ipld.car\r\n\r\n`), resolve))
  let at = 0
  const timer = setInterval(() => {
    if (req.destroyed || req.socket?.destroyed === true || at >= car.byteLength) { clearInterval(timer); return }
    req.write(car.subarray(at, at + 1))
    at++
  }, 500)
  onTestFinished(() => { clearInterval(timer); req.destroy() })
}

describe.skipIf(EXTERNAL)('local service: a body that trickles does not hold a connection for good', () => {
  it('imports trickled a byte at a time on every connection the service holds are cut once past the slowest rate taken, and the service answers others again', async () => {
    const service = await localServiceUnderTest({ maxConnections: 4, bodyRate: { minBytesPerSecond: 1024, graceMs: 3000 } } as Parameters<typeof localServiceUnderTest>[0])
    // A connection of its own each time (no keep-alive pool), as a new caller's.
    const answers = async (): Promise<boolean> => await new Promise<boolean>(resolve => {
      const probe = get(`${service.local.url}/ipfs/bafkqaaa`, { agent: false, timeout: 1000 }, res => { res.resume(); resolve(res.statusCode === 200) })
      probe.on('timeout', () => { probe.destroy() })
      probe.on('error', () => { resolve(false) })
    })
    // Trickles until every connection is busy with one and a new caller is refused (one that
    // connects while another is not yet in its request is closed by the cap: another is started).
    let started = 0
    await until(async () => {
      if (!await answers()) return true
      if (started < 64) { await trickle(service); started++ }
      return undefined
    }, 15_000, 'the trickles to hold every connection', 10)
    // ...until the trickles are cut.
    expect(await until(async () => await answers() ? true : undefined, 15_000, 'a request on a fresh connection to be answered', 250)).toBe(true)
  }, 120_000)
})
