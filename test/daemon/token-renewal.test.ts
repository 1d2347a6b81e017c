import { describe, expect, it, onTestFinished } from 'vitest'
import { existsSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { formatWalletKey, newWalletKey, walletAddress } from '../../src/crypto/index.js'
import { startLocalService } from '../../src/local-service/index.js'
import { createServiceClients } from '../../src/remote/index.js'
import { RENEWED_TOKEN_FILE } from '../../src/connect/index.js'
import { statusProblems } from '../../src/cli/status-check.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { httpGet } from '../helpers/http.js'
import { startInProcessDaemon } from '../helpers/in-process-daemon.js'
import { until } from '../helpers/wait.js'

const DAY = 86_400_000

/**
 * A device in remote mode against a self-hosted service on loopback: an account, its API key and
 * a 3-day session token given by hand beside the config (the wallet key too, unless `kept` is false).
 */
async function remoteDevice (kept: boolean): Promise<{ dir: string, url: string }> {
  for (const name of ['CIDSYNC_SESSION_TOKEN', 'CIDSYNC_API_KEY', 'CIDSYNC_WALLET_KEY']) expect(process.env[name] ?? '', name).toBe('')
  const dir = await useTempDir()
  const local = await startLocalService({ dir: join(dir, 'service') })
  onTestFinished(async () => { await local.stop() })
  const url = local.url
  const clients = createServiceClients({ dealUrl: url, apiUrl: url, pointerUrl: url, uploadUrl: url, gateways: [url] }, { apiKey: () => undefined, sessionToken: () => undefined })
  const key = newWalletKey()
  const { apiKey } = await clients.deals.login(key)
  await clients.close()
  await mkdir(join(dir, 'notes'))
  await writeFile(join(dir, 'api-key'), `${apiKey}\n`, { mode: 0o600 })
  await writeFile(join(dir, 'session-token'), `${local.issueToken(walletAddress(key).toLowerCase(), 3 * 86_400)}\n`, { mode: 0o600 })
  if (kept) await writeFile(join(dir, 'wallet-key'), `${formatWalletKey(key)}\n`, { mode: 0o600 })
  return { dir, url }
}

const remote = (url: string): string => `[service]\nmode = "remote"\ndeal_url = "${url}"\napi_url = "${url}"\npointer_url = "${url}"\nupload_url = "${url}"\ngateways = ["${url}"]\n[snapshot]\ndeal = false\n`

describe('the daemon renews a self-hosted session token by itself', () => {
  it('a token three days from expiry is renewed at start with the kept wallet key, and publishing uses the new one', async () => {
    const { dir, url } = await remoteDevice(true)
    const { daemon, port, token } = await startInProcessDaemon(dir, remote(url))
    const renewed = await until(() => daemon.status().auth.sessionToken.renewal?.state === 'renewed' ? daemon.status().auth.sessionToken : undefined, 20_000, 'the token to be renewed')
    expect(Date.parse(renewed.expiresAt ?? '') - Date.now()).toBeGreaterThan(29 * DAY)
    expect(renewed).toMatchObject({ warning: null, problem: null })
    expect(existsSync(join(dir, 'state', RENEWED_TOKEN_FILE))).toBe(true)
    await writeFile(join(dir, 'notes', 'a.md'), 'a')
    await until(() => daemon.status().index.files === 1 ? true : undefined, 10_000, 'the file to be indexed')
    const published = await httpGet({ port }, '/snapshot', { method: 'POST', headers: { authorization: `Bearer ${token}` } })
    expect(published.status, published.body).toBe(200)
    expect(statusProblems(daemon.status())).toEqual([])
  })

  it('without a wallet key it warns and `status --check` fails while the token still has days left', async () => {
    const { dir, url } = await remoteDevice(false)
    const { daemon } = await startInProcessDaemon(dir, remote(url))
    const auth = await until(() => daemon.status().auth.sessionToken.renewal?.state === 'unavailable' ? daemon.status().auth.sessionToken : undefined, 20_000, 'renewal to say it cannot')
    expect(auth.warning).toContain('it is not renewed by itself: no wallet key is kept to renew it')
    expect(statusProblems(daemon.status()).join('\n')).toMatch(/^auth: the session token expires at \S+ \(in about 3 days\): it is not renewed by itself/m)
  })
})
