import { describe, expect, it, onTestFinished } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { createServer, request } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { DaemonProcess } from '../../helpers/cli.js'
import { until } from '../../helpers/wait.js'
import { proofDir, status } from '../../proof/harness.js'
import { mirroredDevice, publishNow, startHome, type ServiceHome } from '../../cli/mirror-helpers.js'

/** A CID that is never what an upload of cidsync's objects makes (the empty identity CID). */
const OTHER_CID = 'bafkqaaa'

/**
 * A mirror that lies about what it stored: every request goes through to a real service, but the
 * answer of `add` names another CID than the one the bytes make.
 */
async function lyingMirror (home: ServiceHome): Promise<{ home: ServiceHome, adds: () => number }> {
  const target = new URL(home.url)
  let adds = 0
  const server = createServer((req, res) => {
    const lying = (req.url ?? '').startsWith('/api/v0/add')
    if (lying) adds++
    const upstream = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: { ...req.headers, host: target.host } }, answer => {
      if (!lying || answer.statusCode !== 200) {
        res.writeHead(answer.statusCode ?? 502, answer.headers)
        answer.pipe(res)
        return
      }
      const chunks: Buffer[] = []
      answer.on('data', (c: Buffer) => chunks.push(c))
      answer.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8').replace(/"Hash":"[^"]+"/g, `"Hash":"${OTHER_CID}"`)
        const { 'content-length': _length, ...headers } = answer.headers
        res.writeHead(200, { ...headers, 'content-length': Buffer.byteLength(text) })
        res.end(text)
      })
    })
    upstream.on('error', () => { res.destroy() })
    req.pipe(upstream)
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  onTestFinished(async () => { server.closeAllConnections(); await new Promise(resolve => server.close(resolve)) })
  return { home: { ...home, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }, adds: () => adds }
}

describe('mirrors: a mirror that lies about what it stored', () => {
  it('an object the mirror answers with another CID is retried, never skipped as one the primary no longer gives; status blames the mirror', async () => {
    const root = await proofDir()
    const primary = await startHome(join(root, 'primary'))
    const mirror = await lyingMirror(await startHome(join(root, 'mirror')))
    const d = await mirroredDevice(root, 'a', primary, mirror.home)
    const env = { ...process.env, CIDSYNC_MIRROR_RETRY_MAX_MS: '50', CIDSYNC_MIRROR_POINTER_CHECK_MS: '300' }
    const daemon = new DaemonProcess(['--config', d.config], { env })
    onTestFinished(async () => { await daemon.stop() })
    await daemon.logged('service ready', 60_000)
    await writeFile(join(d.kept, 'f.txt'), 'a file for the mirror\n')
    await until(async () => (await status(d)).folders.find((f: { name: string }) => f.name === 'kept')?.files === 1 ? true : undefined, 30_000, 'f.txt indexed')
    await publishNow(d)
    // Far past the attempts after which an object the primary no longer gives is skipped.
    await until(() => mirror.adds() >= 12 ? true : undefined, 120_000, 'the mirror asked to add many times')
    const m = (await status(d)).mirrors[0] as Record<string, any>
    expect(m.unavailable.count, JSON.stringify(m.unavailable)).toBe(0)
    expect(m.objectsBehind).toBeGreaterThan(0)
    expect(m.lastError?.code).toBe('ERR_INTEGRITY')
    expect(m.lastError?.advice).toContain('the mirror computed another CID')
  }, 300_000)
})
