import { existsSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import type { Command } from 'commander'
import { loadConfig, type Config } from '../../config/index.js'
import { ConfigError, UsageError, WalletSharedError } from '../../errors.js'
import { printJson } from '../format.js'
import { safeText } from '../safe-text.js'
import { action } from '../run.js'
import { storeReady } from '../store-ready.js'

/** A secret's file, refused when others may read it, like the saved credentials. */
function secretFile (file: string): string {
  const mode = statSync(file, { throwIfNoEntry: false })?.mode
  if (mode !== undefined && (mode & 0o077) !== 0) {
    throw new ConfigError(`${file} is readable by others (mode ${(mode & 0o777).toString(8)}): run \`chmod 600 ${file}\``)
  }
  return readFileSync(file, 'utf8')
}

/** Whether a credential is set (one that cannot be read counts as set: using it names the problem). */
function hasCredential (read: () => string | undefined): boolean {
  try {
    return (read() ?? '') !== ''
  } catch {
    return true
  }
}

function walletKeyText (file: string | undefined): string {
  if (file !== undefined) return secretFile(file)
  const fromEnv = process.env.CIDSYNC_WALLET_KEY
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv
  throw new UsageError('no wallet key: give --wallet-key-file FILE (the account\'s secp256k1 private key: 64 hex digits, mode 0600), or set CIDSYNC_WALLET_KEY. ' +
    'A self-hosted `cidsync local-service` makes an account for a new key: `(umask 077; openssl rand -hex 32 > wallet.key)`; keep it, it is how you sign in again')
}

/**
 * Signs in to a mirror: an API key for the wallet's signature (with a wallet key), and a session
 * token copied from a file, saved 0600 under the state dir and bound to the URLs the config names
 * now (sent nowhere else).
 */
async function loginMirror (config: Config, name: string, options: { walletKeyFile?: string, sessionTokenFile?: string, sameWallet?: boolean, invite?: string, json?: boolean }): Promise<void> {
  const { connectMirror, findMirror, primaryWallet, saveMirrorCredentials } = await import('../../connect/index.js')
  const { mirrorBackend, mirrorLocation } = await import('../../store/index.js')
  const mirror = findMirror(config, name)
  const backend = mirrorBackend(mirror)
  if (backend.prepare !== undefined) {
    // Nothing to sign in to: its store is made here, never by the daemon, so a disk that is
    // not mounted is never filled in its place.
    const where = mirrorLocation(mirror)
    const open = await storeReady(where, async () => await backend.prepare?.(mirror, true) ?? { openToOthers: [] })
    if (options.json === true) printJson({ mirror: name, [mirror.path !== '' ? 'path' : 'url']: where, ready: true, ...(open.length > 0 ? { openToOthers: open } : {}) })
    else process.stdout.write(`mirror ${name} is a ${backend.noun}: nothing to sign in to; its store is ready at ${safeText(where)}\n` +
      'a running daemon copies to it at its next try, within 5 minutes (`cidsync status` shows it); else from the next `cidsync daemon`\n')
    return
  }
  const haveWallet = options.walletKeyFile !== undefined || (process.env.CIDSYNC_WALLET_KEY ?? '') !== ''
  if (!haveWallet && options.sessionTokenFile === undefined) throw new UsageError('nothing to sign in with: give --wallet-key-file FILE (or set CIDSYNC_WALLET_KEY) for an API key, and/or --session-token-file FILE')
  const sessionToken = options.sessionTokenFile === undefined ? undefined : secretFile(options.sessionTokenFile).trim()
  let apiKey: string | undefined
  let address: string | undefined
  if (haveWallet) {
    if (mirror.dealUrl === '') throw new UsageError(`mirror ${name} has no deal_url, where an API key is got: set it (or url), or give only --session-token-file`)
    const { parseWalletKey, walletAddress } = await import('../../crypto/index.js')
    const walletKey = parseWalletKey(walletKeyText(options.walletKeyFile))
    // Checked before anything is sent: the signature is what a relaying mirror would want.
    if (options.sameWallet !== true && walletAddress(walletKey).toLowerCase() === primaryWallet(config)) {
      throw new WalletSharedError(`this wallet (${walletAddress(walletKey)}) is the one the primary is signed in with: the sign-in message names no service, so mirror ${name} could pass the primary's message on and, with the signature, get an API key for the primary's account. ` +
        'Sign in to the mirror with a wallet of its own (`(umask 077; openssl rand -hex 32 > mirror-wallet.key)`), or add --same-wallet for a mirror you trust as much as the primary')
    }
    const connection = connectMirror(config, mirror)
    try {
      const deals = connection.clients.deals
      if (deals === undefined) throw new UsageError(`mirror ${name} has no deal service to sign in to`)
      ;({ address, apiKey } = await deals.login(walletKey, { invite: options.invite }))
    } finally {
      await connection.close()
    }
  }
  const saved = saveMirrorCredentials(config, mirror, { apiKey, sessionToken })
  if (options.json === true) printJson({ mirror: name, address: address ?? null, saved })
  else process.stdout.write(`mirror ${name}: ${address === undefined ? '' : `signed in as ${address}; `}saved ${saved.join(', ')} (used only while the config names ${mirror.uploadUrl} for it)\n`)
  const { mirrorCredentialsDir } = await import('../../connect/index.js')
  const dir = mirrorCredentialsDir(config, name)
  const needed = [
    { what: 'API key', file: 'api-key', how: '--wallet-key-file F', more: '' },
    { what: 'session token', file: 'session-token', how: '--session-token-file T', more: ` (self-hosted: \`cidsync local-service token --dir D --user ${address ?? 'U'}\`, D being the mirror's directory)` }
  ]
  // Copying needs both: say which is still missing, or status only shows the mirror failing with a 401.
  for (const n of needed.filter(n => !existsSync(join(dir, n.file)))) {
    process.stderr.write(`cidsync: mirror ${name} has no ${n.what} saved yet, and copying to it needs one: \`cidsync login --mirror ${name} ${n.how}\`${n.more}\n`)
  }
}

const LOGIN_HELP = `
The API key:
login is for service.mode = "remote": the embedded service signs in by itself.
It signs the deal service's message with your wallet key, and trades the signature for an API key.
The wallet key is 64 hex digits, from --wallet-key-file or $CIDSYNC_WALLET_KEY.
The API key is saved 0600 as api-key beside the config.
The pointer service needs a session token too: login says where to put one.
Against a self-hosted cidsync local-service, a new wallet makes a new account:

  (umask 077; openssl rand -hex 32 > wallet.key)
  cidsync login --wallet-key-file wallet.key

--invite gives the code of a service with signup = "invite", for a new account.

Mirrors:
--mirror NAME signs in to that mirror's service instead (docs/mirrors.md).
A mirror takes a wallet of its own: the primary's is refused without --same-wallet.
Else the mirror could relay the signature to the primary, and get an API key there.
--session-token-file also saves a session token for the mirror's pointer service.
Both are saved 0600 in the state dir, under mirrors/NAME/.
They are sent only while the config names the same URLs for that mirror.
A mirror that is a directory (path =) has nothing to sign in to: --mirror NAME makes its store, once.`

export function registerLogin (program: Command): void {
  program.command('login')
    .description('get an API key by signing the deal service\'s message with your wallet key, and save it (0600)')
    .addHelpText('after', LOGIN_HELP)
    .option('--config <path>', 'config file')
    .option('--wallet-key-file <file>', 'file holding the wallet key (hex); else $CIDSYNC_WALLET_KEY')
    .option('--mirror <name>', 'sign in to this [[mirrors]] table\'s service instead (a directory: make its store); saved in the state dir (mirrors/NAME/, 0600), bound to its URLs')
    .option('--session-token-file <file>', 'with --mirror: also save this session token for the mirror\'s pointer service')
    .option('--same-wallet', 'with --mirror: sign with the wallet the primary is signed in with (only for a mirror trusted as much: below)')
    .option('--invite <code>', 'an invitation code from the operator of a self-hosted service with signup = "invite" (a new account only)')
    .option('--no-keep-wallet', 'a self-hosted service: do not keep the wallet key beside the config (then the session token is not renewed by itself)')
    .option('--json', 'print JSON')
    .action(action(async (options: { config?: string, walletKeyFile?: string, mirror?: string, sessionTokenFile?: string, sameWallet?: boolean, invite?: string, keepWallet?: boolean, json?: boolean }) => {
      const config = loadConfig({ configPath: options.config })
      if (options.keepWallet === false && options.mirror !== undefined) throw new UsageError('--no-keep-wallet goes without --mirror (a mirror\'s wallet is never kept)')
      if (options.mirror !== undefined) {
        await loginMirror(config, options.mirror, options)
        return
      }
      if (options.sessionTokenFile !== undefined) throw new UsageError('--session-token-file goes with --mirror (the primary\'s session token is the session-token credential beside the config)')
      if (options.sameWallet === true) throw new UsageError('--same-wallet goes with --mirror')
      if (config.service.mode === 'embedded') {
        process.stdout.write(`the embedded service signs in by itself (its account is in ${config.service.dir}); login is for service.mode = "remote"\n`)
        return
      }
      const { parseWalletKey } = await import('../../crypto/index.js')
      const walletText = walletKeyText(options.walletKeyFile)
      const walletKey = parseWalletKey(walletText)
      const { connectService, Credential, credentialsDir, savePrimaryWallet } = await import('../../connect/index.js')
      const connection = await connectService(config)
      try {
        const { address, apiKey } = await connection.clients.deals.login(walletKey, { invite: options.invite })
        const path = new Credential('api-key', credentialsDir(config)).save(apiKey)
        savePrimaryWallet(config, address)
        const { sessionTokenByWallet } = await import('./login-session.js')
        const session = await sessionTokenByWallet(config, connection, walletKey, walletText, { keepWallet: options.keepWallet !== false })
        if (options.json === true) printJson({ address, saved: path, sessionToken: session.tokenPath ?? null, walletKey: session.walletPath ?? null })
        else process.stdout.write(`signed in as ${address}; API key saved to ${path}\n${session.lines.join('')}`)
        for (const note of session.notes) process.stderr.write(`cidsync: ${note}\n`)
        if (!hasCredential(connection.credentials.sessionToken)) {
          // The API key alone publishes nothing: the pointer needs the session token, which login cannot get.
          process.stderr.write(`cidsync: the pointer service also needs a session token, and none is set: copy one from the dashboard (self-hosted: \`cidsync local-service token --dir D --user ${address}\`, D being the running service's directory) into ${join(credentialsDir(config), 'session-token')} (0600), or set CIDSYNC_SESSION_TOKEN\n`)
        }
      } finally {
        await connection.close()
      }
    }))
}
