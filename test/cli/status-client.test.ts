import { describe, expect, it } from 'vitest'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { startLocalService } from '../../src/local-service/index.js'
import { newWalletKey, walletAddress } from '../../src/crypto/index.js'
import { createServiceClients } from '../../src/remote/index.js'
import { DaemonProcess, runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'

describe('asking the running daemon to publish', () => {
  it('says what the daemon met (the service cannot be reached, with its code), not that the daemon is unavailable', async () => {
    const dir = await useTempDir()
    const local = await startLocalService({ dir: join(dir, 'service') })
    const url = local.url
    try {
      // Signed in as a user would be: an API key from the wallet, a session token from the identity tool.
      const wallet = newWalletKey()
      const clients = createServiceClients({ dealUrl: local.url, apiUrl: local.url, pointerUrl: local.url, uploadUrl: local.url, gateways: [local.url] }, { apiKey: () => undefined, sessionToken: () => undefined })
      const { apiKey } = await clients.deals.login(wallet)
      await clients.close()
      const env = { ...process.env, CIDSYNC_API_KEY: apiKey, CIDSYNC_SESSION_TOKEN: local.issueToken(walletAddress(wallet)) }
      await mkdir(join(dir, 'notes'))
      await writeFile(join(dir, 'notes', 'a.md'), 'a')
      const config = join(dir, 'c.toml')
      await writeFile(config, `state_dir = "state"
[[folders]]
name = "notes"
path = "notes"
[status]
listen = "127.0.0.1:0"
[service]
mode = "remote"
deal_url = "${local.url}"
api_url = "${local.url}"
pointer_url = "${local.url}"
upload_url = "${local.url}"
gateways = ["${local.url}"]
[snapshot]
schedule = "0 0 1 1 *"
quiet_seconds = 86400
[reconcile]
schedule = "0 0 1 1 *"
`)
      const daemon = new DaemonProcess(['--config', config], { env })
      await daemon.logged('service ready')
      // Reconciling on start ends before the outage, so only the publish meets it.
      await until(async () => {
        const s = JSON.parse((await runCli(['status', '--json', '--config', config])).stdout) as { reconcile: { lastRun: string | null } | null }
        return s.reconcile?.lastRun != null ? true : undefined
      }, 15_000, 'the first reconcile')
      await local.stop()

      const failed = await runCli(['snapshot', '--config', config], { env, timeoutMs: 60_000 })
      expect(failed.code).toBe(1)
      expect(failed.stderr).toContain(url)
      expect(failed.stderr).toContain('[ERR_REMOTE_NETWORK]')
      expect(failed.stderr).not.toContain('ERR_STATUS_UNAVAILABLE')
      expect(failed.stderr).not.toContain('{"error"')
      expect(failed.stderr).not.toContain('answered 502')

      const status = await runCli(['status', '--config', config], { env })
      expect(status.stdout).toMatch(/^service: .*cannot be reached \(the last publish, at \S+, failed\): .*ERR_REMOTE_NETWORK/m)
      expect((await daemon.stop()).code).toBe(0)
    } finally {
      await local.stop()
    }
  })
})
