import { closeSync, fstatSync, fsyncSync, openSync, unlinkSync, writeSync } from 'node:fs'
import { homedir } from 'node:os'
import { isAbsolute, relative, resolve } from 'node:path'
import { hasSnapshotPassphrase, type Config } from '../../config/index.js'
import { UsageError } from '../../errors.js'
import { exactSpanText, formatDuration } from '../../retention/index.js'
import { jwtExpiry } from '../../util/jwt.js'
import { BUNDLE_FORMAT, grantsOf, renderBundle, type DeviceBundle } from '../device-bundle.js'

/** `inner` is `outer` or lies under it. */
function within (outer: string, inner: string): boolean {
  const rel = relative(resolve(outer), resolve(inner))
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel))
}

/** A folder's path as the other device should read it: under the home dir as `~/...`, so it lands in that device's home. */
function portablePath (path: string, home = homedir()): string {
  return within(home, path) && resolve(path) !== resolve(home) ? `~/${relative(home, path)}` : path
}

/** The service, as the other device must set it; refused when it cannot reach this one's. */
function serviceOf (config: Config): DeviceBundle['service'] {
  const s = config.service
  if (s.mode === 'remote') return { mode: 'remote', dealUrl: s.dealUrl, apiUrl: s.apiUrl, pointerUrl: s.pointerUrl, uploadUrl: s.uploadUrl, gateways: [...s.gateways] }
  if (within(config.stateDir, s.dir)) {
    throw new UsageError(`this device uses its embedded service, whose account is in ${s.dir}, inside this device's state dir: another device cannot reach it. ` +
      'Run a service both devices reach (`cidsync local-service`, docs/local-service.md) with [service] mode = "remote", or put [service] dir on a folder both mount; then make the join file')
  }
  return { mode: 'embedded', dir: s.dir }
}

/** This device's `[retention]` as a config writes it, its time zone named: the other device forgets alike. */
function retentionTable (config: Config): DeviceBundle['retention'] {
  const r = config.retention
  if (r === undefined) return null
  const p = r.policy
  return {
    keep_last: p.keepLast,
    keep_hourly: p.keepHourly,
    keep_daily: p.keepDaily,
    keep_weekly: p.keepWeekly,
    keep_monthly: p.keepMonthly,
    keep_yearly: p.keepYearly,
    ...(p.keepWithin === undefined ? {} : { keep_within: formatDuration(p.keepWithin) }),
    prune_margin: exactSpanText(r.pruneMarginSeconds),
    schedule: r.schedule,
    time_zone: r.timeZone
  }
}

/** Everything the other device needs, read from this one: the account's credentials and keys, no network. */
async function gather (config: Config): Promise<{ bundle: DeviceBundle, missing: string[] }> {
  const service = serviceOf(config)
  const passphrase = hasSnapshotPassphrase()
  const sealed = config.snapshot.encryption !== 'none' || config.content.encryption !== 'none'
  let snapshotKey: string | undefined
  if (!passphrase && sealed) {
    const { exportKey } = await import('../../snapshot/index.js')
    snapshotKey = exportKey(config.stateDir)
  }
  const missing: string[] = []
  let credentials: Pick<DeviceBundle, 'walletKey' | 'address' | 'apiKey' | 'sessionToken'> = {}
  if (service.mode === 'remote') {
    const { connectService, Credential, credentialsDir, primaryWallet } = await import('../../connect/index.js')
    const { parseWalletKey, walletAddress } = await import('../../crypto/index.js')
    const walletKey = new Credential('wallet-key', credentialsDir(config)).value()
    // The token in use: a renewed one when the daemon renewed it. No request is sent.
    const connection = await connectService(config)
    try {
      credentials = {
        walletKey,
        address: walletKey === undefined ? primaryWallet(config) : walletAddress(parseWalletKey(walletKey)).toLowerCase(),
        apiKey: connection.credentials.apiKey(),
        sessionToken: connection.credentials.sessionToken()
      }
    } finally {
      await connection.close()
    }
    if (credentials.walletKey === undefined && credentials.apiKey === undefined && credentials.sessionToken === undefined) {
      throw new UsageError('this device holds no credentials for the service (no wallet key, API key or session token): run `cidsync login --wallet-key-file F` first, then make the join file')
    }
    if (credentials.walletKey === undefined) missing.push('the wallet key (the other device cannot renew its session token, nor sign in again): `cidsync login --wallet-key-file F` here keeps it')
    if (credentials.sessionToken === undefined && credentials.walletKey === undefined) missing.push('a session token (the other device cannot read or move the pointer)')
  } else {
    // The embedded account the shared dir holds: the other device notes it, so a dir not mounted
    // at its first command is refused there instead of becoming a new account.
    const { embeddedAccountAddress } = await import('../../connect/index.js')
    credentials = { address: embeddedAccountAddress(service.dir) }
  }
  const base = {
    settings: { namespace: config.namespace, network: config.network, cidProfile: config.cidProfile, snapshotEncryption: config.snapshot.encryption, contentEncryption: config.content.encryption },
    service,
    folders: config.folders.map(f => ({ name: f.name, path: portablePath(f.path) })),
    retention: retentionTable(config),
    snapshotKey,
    passphrase,
    ...Object.fromEntries(Object.entries(credentials).filter(([, v]) => v !== undefined && v !== ''))
  }
  const bundle: DeviceBundle = { format: BUNDLE_FORMAT, createdAt: new Date().toISOString(), grants: grantsOf(base, jwtExpiry(credentials.sessionToken)?.toISOString()), ...base }
  return { bundle, missing }
}

/** Writes `text` into a new file made 0600 as it is created: never wider, never over another file. */
function writeNewPrivate (path: string, text: string): void {
  let fd: number
  try {
    fd = openSync(path, 'wx', 0o600)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new UsageError(`${path} exists: give a new file name (the join file is made 0600 as it is created, never written over another file)`, { cause: err })
    throw err
  }
  try {
    const bytes = Buffer.from(text)
    for (let at = 0; at < bytes.byteLength;) at += writeSync(fd, bytes, at)
    fsyncSync(fd)
    closeSync(fd)
  } catch (err) {
    closeSync(fd)
    unlinkSync(path)
    throw err
  }
}

/**
 * `-`: standard output, only into a pipe (`| ssh other cidsync init --join -`): a terminal would
 * show the keys, and a file the shell made for `>` was readable by others before this ran.
 */
function checkStdout (): void {
  if (process.stdout.isTTY === true) throw new UsageError('--bundle -: standard output is a terminal, and the join file holds the account\'s keys: give a file name (--bundle FILE), or pipe it')
  const stats = fstatSync(1)
  if (stats.isFile() && (stats.mode & 0o077) !== 0) {
    throw new UsageError(`--bundle -: standard output is a file others may read (mode ${(stats.mode & 0o777).toString(8)}), made by the shell before cidsync ran: remove it, and give its name to --bundle instead, so it is made 0600 as it is created`)
  }
}

/** `cidsync key export --bundle FILE|-`. */
export async function exportBundle (config: Config, target: string): Promise<void> {
  if (target === '-') checkStdout()
  const { bundle, missing } = await gather(config)
  const text = renderBundle(bundle)
  if (target === '-') process.stdout.write(text)
  else writeNewPrivate(target, text)
  const where = target === '-' ? 'wrote the join file to standard output' : `wrote the join file ${target} (mode 0600)`
  process.stderr.write(`${where}. Whoever holds it gets:\n${bundle.grants.map(g => `  - ${g}\n`).join('')}` +
    `On the other device: cidsync init --join ${target === '-' ? '-' : 'FILE'}. Delete the file once it is used.\n`)
  for (const m of missing) process.stderr.write(`cidsync: warning: the join file lacks ${m}\n`)
  // A mirror's path or credentials are this device's own: the other device sets up its own.
  if (config.mirrors.length > 0) {
    process.stderr.write(`cidsync: the join file carries no [[mirrors]] table (${config.mirrors.map(m => m.name).join(', ')}): add them to the other device's config to read from them there (docs/mirrors.md)\n`)
  }
  if (bundle.service.mode === 'remote') {
    const loopback = [bundle.service.dealUrl, bundle.service.pointerUrl, ...bundle.service.gateways].filter(u => /^(127\.|localhost$|\[::1\]$)/.test(new URL(u).hostname))
    if (loopback.length > 0) process.stderr.write(`cidsync: warning: the service URLs name this machine (${new URL(loopback[0] as string).host}): another machine cannot reach them there. Set [service] to an address it reaches, then make the join file again\n`)
  }
  if (bundle.passphrase) process.stderr.write('cidsync: the snapshots are sealed with CIDSYNC_SNAPSHOT_PASSPHRASE, which the join file does not hold: set it to the same passphrase on the other device\n')
}
