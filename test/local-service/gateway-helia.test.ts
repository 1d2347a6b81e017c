import { describe, expect, it, onTestFinished } from 'vitest'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import * as dagPb from '@ipld/dag-pb'
import { CID } from 'multiformats/cid'
import { startLocalService } from '../../src/local-service/index.js'
import { createServiceClients } from '../../src/remote/index.js'
import { cidProfile } from '../../src/content/index.js'
import { newWalletKey, walletAddress } from '../../src/crypto/index.js'
import { startInProcessDaemon, statusOf } from '../helpers/in-process-daemon.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'
import { fetchBytes, fromBlocks, heliaBlocks, unixfsFile, verifiedCar } from '../helpers/trustless.js'

describe('the local service\'s trustless gateway, read by an independent client', () => {
  it('gives Helia\'s trustless gateway client and a CAR reader the same verified bytes of every object a daemon uploaded', async () => {
    const dir = await useTempDir()
    const service = await startLocalService({ dir: join(dir, 'service'), dealDelayMs: 60_000 })
    onTestFinished(async () => { await service.stop() })
    const url = service.url
    // The daemon is this service's user, as on a self-hosted service: its credentials beside its config.
    const wallet = newWalletKey()
    const signup = createServiceClients({ dealUrl: url, apiUrl: url, pointerUrl: url, uploadUrl: url, gateways: [url] }, { apiKey: () => undefined, sessionToken: () => undefined })
    onTestFinished(async () => { await signup.close() })
    const apiKey = (await signup.deals.login(wallet)).apiKey
    await writeFile(join(dir, 'api-key'), apiKey, { mode: 0o600 })
    await writeFile(join(dir, 'session-token'), service.issueToken(walletAddress(wallet)), { mode: 0o600 })
    await mkdir(join(dir, 'kept'))
    await writeFile(join(dir, 'kept', 'big.bin'), randomBytes(700_000))
    await writeFile(join(dir, 'kept', 'small.txt'), 'a small note')
    const { port, token } = await startInProcessDaemon(dir, `[[folders]]\nname = "kept"\npath = "kept"\nstore = true\n[service]\nmode = "remote"\ndeal_url = "${url}"\napi_url = "${url}"\npointer_url = "${url}"\nupload_url = "${url}"\ngateways = ["${url}"]\n`)
    await until(async () => {
      const kept = (await statusOf(port)).content?.folders.find(f => f.folder === 'kept')
      return kept?.protected.files === 2 && kept.pending.files === 0 ? kept : undefined
    }, 60_000, 'both files stored')
    const published = await fetch(`http://127.0.0.1:${port}/snapshot`, { method: 'POST', headers: { authorization: `Bearer ${token}` } })
    expect(published.status).toBe(200)
    expect(service.requestLog().filter(r => r.route === 'pointers_put' && r.status === 200)).not.toEqual([])

    const files = createServiceClients({ dealUrl: url, apiUrl: url, pointerUrl: url, uploadUrl: url, gateways: [url] }, { apiKey: () => apiKey, sessionToken: () => undefined })
    onTestFinished(async () => { await files.close() })
    const uploaded: string[] = []
    const names: string[] = []
    for await (const record of files.files()) {
      uploaded.push(record.cid)
      names.push(record.fileName)
    }
    // The snapshot (a manifest and its segment) and the content (both files, sealed in one pack).
    expect(names.some(n => n.endsWith('.manifest'))).toBe(true)
    expect(names.some(n => n.endsWith('.seg'))).toBe(true)
    expect(names.some(n => n === 'cidsync-pack.sealed')).toBe(true)
    // And the publish's plain root (docs/snapshot-format.md): not a file, a node that links the manifest.
    const roots: string[] = []
    for (const text of uploaded) {
      if (CID.parse(text).code !== dagPb.code) continue
      const node = dagPb.decode((await fetchBytes(url, `/ipfs/${text}?format=raw`)).body)
      if (node.Data === undefined) roots.push(text)
    }
    // One a publish, each naming one of the manifests listed.
    const manifests = uploaded.filter((_, i) => names[i]?.endsWith('.manifest') === true)
    expect(roots.length).toBe(manifests.length)
    for (const root of roots) expect(manifests).toContain(dagPb.decode((await fetchBytes(url, `/ipfs/${root}?format=raw`)).body).Links.find(l => l.Name === 'manifest')?.Hash.toString())
    const objects = uploaded.filter(text => !roots.includes(text))

    // Only loopback is ever asked: the broker's one router is the fallback router naming this gateway.
    const asked: string[] = []
    const realFetch = globalThis.fetch
    globalThis.fetch = async (input, init) => {
      asked.push(new URL(input instanceof Request ? input.url : input.toString()).host)
      return await realFetch(input, init)
    }
    onTestFinished(() => { globalThis.fetch = realFetch })
    const helia = heliaBlocks(url)
    const work = await useTempDir()
    let blocks = 0
    for (const text of objects) {
      const cid = CID.parse(text)
      const viaHelia = await unixfsFile(cid, async key => { blocks++; return await helia(key) })
      const car = await fetchBytes(url, `/ipfs/${text}?format=car`)
      expect(car.status).toBe(200)
      const { roots, blocks: carBlocks } = await verifiedCar(car.body)
      expect(roots.map(r => r.toString())).toEqual([text])
      const viaCar = await unixfsFile(cid, fromBlocks(carBlocks))
      // And cidsync's own client, which recomputes the CID from the whole file under its profile.
      const path = join(work, text)
      await signup.objects.getFile(text, cidProfile('kubo-cidv1'), path)
      const viaDaemonClient = await readFile(path)
      expect(viaHelia.equals(viaCar)).toBe(true)
      expect(viaHelia.equals(viaDaemonClient)).toBe(true)
    }
    expect(blocks).toBeGreaterThan(uploaded.length) // the 700 KB file is several blocks
    expect(asked.length).toBe(blocks)
    expect(new Set(asked)).toEqual(new Set([new URL(url).host]))
    expect(service.requestLog().filter(r => r.route === 'gateway' && r.status !== 200)).toEqual([])
  })
})
