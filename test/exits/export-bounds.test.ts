import { describe, expect, it, onTestFinished } from 'vitest'
import { existsSync } from 'node:fs'
import { readFile, writeFile } from 'node:fs/promises'
import { createServer, request } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { EXTERNAL } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { ok, writeSomeFiles } from '../cli/content-devices.js'
import { exitDevice, freshService, historyOf } from './exit-devices.js'

/** What the lying gateway sends at most for one object: far past any manifest. */
const JUNK_BYTES = 256 * 1024 * 1024

/**
 * A gateway in front of the service that answers `/ipfs/<victim>` with junk, without a length, as
 * fast as the client reads (up to {@link JUNK_BYTES}); everything else goes through. Counts what it sent.
 */
async function junkGateway (upstream: string, victim: string): Promise<{ url: string, sent: () => number }> {
  const target = new URL(upstream)
  let sent = 0
  const chunk = Buffer.alloc(1024 * 1024, 0x61)
  const server = createServer((req, res) => {
    if ((req.url ?? '').startsWith(`/ipfs/${victim}`)) {
      req.resume()
      res.writeHead(200, { 'content-type': 'application/octet-stream' })
      let left = JUNK_BYTES
      const pump = (): void => {
        while (left > 0) {
          left -= chunk.byteLength
          sent += chunk.byteLength
          if (!res.write(chunk)) { res.once('drain', pump); return }
        }
        res.end()
      }
      res.on('close', () => { left = 0 })
      pump()
      return
    }
    const forward = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: { ...req.headers, host: target.host } }, answer => {
      res.writeHead(answer.statusCode ?? 502, answer.headers)
      answer.pipe(res)
    })
    forward.on('error', () => { res.destroy() })
    req.pipe(forward)
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  onTestFinished(async () => { server.closeAllConnections(); await new Promise(resolve => server.close(resolve)) })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, sent: () => sent }
}

describe.skipIf(EXTERNAL)('export --car against a gateway that sends a flood', () => {
  it('a manifest answered with an endless body is given up past the most a manifest may weigh, not after gigabytes; no FILE', async () => {
    const root = await useTempDir()
    const one = await freshService(root, 'one')
    const a = await exitDevice(root, one, 'a')
    await writeSomeFiles(a.folder, 'd', { largeBytes: 100 * 1024, small: 3 })
    await ok(a, ['snapshot'])
    const [head] = await historyOf(a)
    const gateway = await junkGateway(one.local.url, head?.cid ?? '')
    const config = await readFile(a.config, 'utf8')
    await writeFile(a.config, config.replace(/^gateways = .*$/m, `gateways = ["${gateway.url}"]`))
    const car = join(root, 'out.car')
    const run = await a.run(['export', '--car', car])
    expect(run.code, run.stderr).not.toBe(0)
    expect(run.stderr).toContain(`manifest ${head?.cid ?? '?'}`)
    expect(existsSync(car)).toBe(false)
    // A sealed manifest weighs at most 16 MiB and 64 KiB: what the socket buffers on top is a few MiB.
    expect(gateway.sent()).toBeLessThan(48 * 1024 * 1024)
  }, 300_000)
})
