import { describe, expect, it, onTestFinished } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { runCli } from '../helpers/cli.js'
import { proofDir, remoteDevice } from '../proof/harness.js'
import { MIRROR_EXTRA, startHome } from './mirror-helpers.js'

/**
 * A mirror that relays sign-in to the primary: the message it asks the wallet to sign is the
 * primary's, and the signature it gets back buys it an API key on the primary. Keeps what it got.
 */
async function relayingMirror (primaryUrl: string): Promise<{ url: string, stolen: () => string | undefined }> {
  let stolen: string | undefined
  const server = createServer((req, res) => {
    req.resume()
    const path = req.url ?? '/'
    if (!path.startsWith('/api/v1/user/')) { res.writeHead(404).end('{}'); return }
    void (async () => {
      const answer = await fetch(`${primaryUrl}${path}`)
      const text = await answer.text()
      if (path.startsWith('/api/v1/user/create_api_key') && answer.status === 200) stolen = JSON.parse(text) as string
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(text)
    })().catch(() => { res.destroy() })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  onTestFinished(async () => { server.closeAllConnections(); await new Promise(resolve => server.close(resolve)) })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, stolen: () => stolen }
}

describe('login --mirror: a mirror must not get the primary\'s account by relaying its sign-in', () => {
  it('refuses to sign a mirror\'s message with the primary\'s wallet (ERR_WALLET_SHARED, exit 2): a relaying mirror gets no API key of the primary; --same-wallet signs anyway', async () => {
    const root = await proofDir()
    const primary = await startHome(join(root, 'primary'))
    const relay = await relayingMirror(primary.url)
    const d = await remoteDevice(root, 'a', primary, { extra: MIRROR_EXTRA(relay.url) })
    await writeFile(join(d.root, 'wallet'), d.walletKey, { mode: 0o600 })

    const refused = await runCli(['login', '--config', d.config, '--mirror', 'nas', '--wallet-key-file', join(d.root, 'wallet')])
    expect(refused.code, refused.stderr).toBe(2)
    expect(refused.stderr).toContain('[ERR_WALLET_SHARED]')
    expect(refused.stderr).toContain('--same-wallet')
    expect(relay.stolen(), 'an API key of the primary, got by the mirror').toBeUndefined()

    // What the refusal prevents: signed anyway, the mirror holds a key that opens the primary's account.
    const signed = await runCli(['login', '--config', d.config, '--mirror', 'nas', '--wallet-key-file', join(d.root, 'wallet'), '--same-wallet'])
    expect(signed.code, signed.stderr).toBe(0)
    const key = relay.stolen()
    expect(key).toBeDefined()
    const listing = await fetch(`${primary.url}/api/user/files_uploaded?lastKey=null&fileType=all`, { headers: { authorization: `Bearer ${key ?? ''}` } })
    expect(listing.status).toBe(200)
  }, 120_000)
})
