import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { formatWalletKey, newWalletKey, walletAddress } from '../../src/crypto/index.js'
import { runCli } from '../helpers/cli.js'
import { ok as proofOk, serviceProcess } from '../proof/harness.js'
import { SMALL_LAYOUT, type ContentDevice } from './content-devices.js'

/** `cidsync local-service` as its own process on loopback, and one wallet: the account every device signs in as. */
export interface Account { readonly url: string, readonly dir: string, readonly walletKey: string, readonly address: string }

export async function selfHostedAccount (dir: string): Promise<Account> {
  const service = await serviceProcess(dir, ['--listen', '127.0.0.1:0', '--no-admin'])
  const key = newWalletKey()
  return { url: service.url, dir, walletKey: formatWalletKey(key), address: walletAddress(key) }
}

/**
 * A device of the account, as a user sets one up: a storing folder `notes`, the service's URLs,
 * `cidsync login` with the account's wallet, and a session token the service's tool issued,
 * kept beside its config. `extra` goes after `[snapshot]`.
 */
export async function accountDevice (root: string, name: string, account: Account, extra = ''): Promise<ContentDevice> {
  const home = join(root, name)
  const folder = join(home, 'notes')
  await mkdir(folder, { recursive: true })
  const config = join(home, 'cidsync.toml')
  const url = account.url
  await writeFile(config, 'state_dir = "state"\nnamespace = "race"\n[[folders]]\nname = "notes"\npath = "notes"\nstore = true\n' +
    `[status]\nlisten = "127.0.0.1:0"\n[service]\nmode = "remote"\ndeal_url = "${url}"\napi_url = "${url}"\npointer_url = "${url}"\nupload_url = "${url}"\n` +
    `gateways = ["${url}"]\n[snapshot]\ndeal = false\n${extra}`)
  const env = { ...process.env, ...SMALL_LAYOUT, CIDSYNC_API_KEY: '', CIDSYNC_SESSION_TOKEN: '', CIDSYNC_WALLET_KEY: '' }
  await proofOk(['login', '--config', config], { env: { ...env, CIDSYNC_WALLET_KEY: account.walletKey } })
  const token = (await proofOk(['local-service', 'token', '--user', account.address, '--dir', account.dir, '--ttl-seconds', '86400'])).stdout.trim()
  await writeFile(join(home, 'session-token'), `${token}\n`, { mode: 0o600 })
  return {
    name, config, state: join(home, 'state'), folder, env,
    run: async (args, more = {}) => await runCli([...args, '--config', config], { env: { ...env, ...more }, timeoutMs: 120_000 })
  }
}
