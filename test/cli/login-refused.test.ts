import { describe, expect, it, onTestFinished } from 'vitest'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { formatWalletKey, newWalletKey, walletAddress } from '../../src/crypto/index.js'
import { startLocalService } from '../../src/local-service/index.js'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

describe('cidsync login to a service whose sign-up lets this wallet not in', { timeout: 90_000 }, () => {
  it('names the wallet and how its operator lets it in, not "run cidsync login" again', async () => {
    const dir = await useTempDir()
    const service = await startLocalService({ dir: join(dir, 'svc'), policy: { signup: 'closed', allow: [], maxBytesPerAccount: 0, maxIpnsKeysPerAccount: 0 } })
    onTestFinished(async () => { await service.stop() })
    const url = service.url
    await mkdir(join(dir, 'etc'))
    const config = join(dir, 'etc', 'c.toml')
    await writeFile(config, `state_dir = "../state"\n[service]\nmode = "remote"\ndeal_url = "${url}"\napi_url = "${url}"\npointer_url = "${url}"\nupload_url = "${url}"\ngateways = ["${url}"]\n`)
    const walletKey = newWalletKey()
    const keyFile = join(dir, 'wallet.key')
    await writeFile(keyFile, formatWalletKey(walletKey), { mode: 0o600 })

    const login = await runCli(['login', '--config', config, '--wallet-key-file', keyFile], { env: { ...process.env, CIDSYNC_WALLET_KEY: '', CIDSYNC_API_KEY: '' } })
    expect(login.code, login.stderr).toBe(1)
    const address = walletAddress(walletKey)
    expect(login.stderr).toContain('sign-up is closed on this service')
    expect(login.stderr).toContain(`this wallet (${address}) may not sign in here`)
    expect(login.stderr).toContain(`allow = ["${address}"]`)
    expect(login.stderr).toContain('[ERR_REMOTE_UNAUTHORIZED]')
    // The hint for a command run without a key would tell the user to do what they just did.
    expect(login.stderr).not.toContain('no API key is set')
  })
})
