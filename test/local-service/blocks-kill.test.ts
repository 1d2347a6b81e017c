import { sentProgress } from '../../src/store/index.js'
import { describe, it, expect, onTestFinished } from 'vitest'
import { spawn, type ChildProcess } from 'node:child_process'
import { readdirSync, statSync } from 'node:fs'
import { readdir, readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { CLI } from '../helpers/cli.js'
import { createServiceClients } from '../../src/remote/index.js'
import { cidProfile } from '../../src/content/index.js'
import { newWalletKey } from '../../src/crypto/index.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'

const profile = cidProfile('kubo-cidv1')

/** `cidsync local-service` as its own process, for a kill -9. */
async function serviceProcess (dir: string): Promise<{ child: ChildProcess, url: string }> {
  const child = spawn(process.execPath, [CLI, 'local-service', '--dir', dir, '--no-admin'], { stdio: ['ignore', 'pipe', 'ignore'] })
  onTestFinished(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.once('data', (d: Buffer) => resolve(d.toString().trim()))
    child.once('exit', code => reject(new Error(`local-service exited ${String(code)}`)))
  })
  return { child, url }
}

function clientsOf (url: string, key: { apiKey?: string }): ReturnType<typeof createServiceClients> {
  const clients = createServiceClients({ dealUrl: url, apiUrl: url, pointerUrl: url, uploadUrl: url, gateways: [url] }, { apiKey: () => key.apiKey, sessionToken: () => undefined }, { retry: { baseDelayMs: 10, maxDelayMs: 50, attempts: 1, maxRetryAfterMs: 1000 } })
  onTestFinished(async () => { await clients.close() })
  return clients
}

describe('the local service\'s packs under kill -9', () => {
  it('keeps every answered upload and takes the next upload after a kill mid-upload', async () => {
    const root = await useTempDir()
    const dir = join(root, 'service')
    const key: { apiKey?: string } = {}
    const first = await serviceProcess(dir)
    const one = clientsOf(first.url, key)
    key.apiKey = (await one.deals.login(newWalletKey())).apiKey
    const kept = randomBytes(3 * 1024 * 1024)
    await writeFile(join(root, 'kept.bin'), kept)
    const keptCid = (await one.objects.put(join(root, 'kept.bin'), profile)).cid
    const big = randomBytes(24 * 1024 * 1024)
    await writeFile(join(root, 'big.bin'), big)
    // Killed once a third of the body has gone and the service has appended some of it to its
    // pack: blocks are in the pack, none indexed yet. "Sent" alone is not enough: loopback buffers
    // hold megabytes, so a service slowed by a loaded machine may not have read them yet.
    const packed = (): number => readdirSync(join(dir, 'packs')).reduce((sum, name) => sum + statSync(join(dir, 'packs', name)).size, 0)
    const cut = one.objects.put(join(root, 'big.bin'), profile, { retry: false, onProgress: sentProgress(sent => { if (sent > 8 * 1024 * 1024 && packed() > kept.length + 256 * 1024) first.child.kill('SIGKILL') }) })
    await expect(cut).rejects.toThrow()
    await until(async () => first.child.signalCode !== null ? true : undefined, 10_000, 'the service killed')
    // The kill came mid-write: the pack holds bytes past the answered upload's, never indexed.
    const packs = await readdir(join(dir, 'packs'))
    const packBytes = (await Promise.all(packs.map(async name => (await stat(join(dir, 'packs', name))).size))).reduce((a, b) => a + b, 0)
    expect(packBytes).toBeGreaterThan(kept.length + 256 * 1024)

    const second = await serviceProcess(dir)
    const two = clientsOf(second.url, key)
    await two.objects.getFile(keptCid, profile, join(root, 'kept-back.bin'))
    expect((await readFile(join(root, 'kept-back.bin'))).equals(kept)).toBe(true)
    const bigCid = (await two.objects.put(join(root, 'big.bin'), profile)).cid
    await two.objects.getFile(bigCid, profile, join(root, 'big-back.bin'))
    expect((await readFile(join(root, 'big-back.bin'))).equals(big)).toBe(true)
  })
})
