import { closeSync, constants, existsSync, fstatSync, mkdirSync, openSync, readSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { makeDirsSync } from '../../util/make-dirs.js'
import { DEFAULT_PRUNE_MARGIN, isLoopbackHost, loadConfig, hasSnapshotPassphrase, type Config } from '../../config/index.js'
import { BundleInvalidError, InternalError, UsageError } from '../../errors.js'
import { exactSeconds, parseDuration } from '../../retention/index.js'
import { MAX_BUNDLE_BYTES, parseBundle, type DeviceBundle } from '../device-bundle.js'

const CREDENTIAL_FILES = ['api-key', 'session-token', 'wallet-key'] as const

async function readStdin (): Promise<string> {
  let text = ''
  for await (const chunk of process.stdin) {
    text += (chunk as Buffer).toString('utf8')
    if (text.length > MAX_BUNDLE_BYTES) break
  }
  return text
}

/**
 * The join file, read like any secret's file: not through a link, a regular file, private to
 * its owner (else refused: it held the account's keys where others could read them), bounded.
 */
export async function readBundle (file: string): Promise<DeviceBundle> {
  if (file === '-') {
    if (process.stdin.isTTY === true) throw new UsageError('--join -: standard input is a terminal: give the join file\'s name, or pipe it in (`... | cidsync init --join -`)')
    return parseBundle(await readStdin(), 'standard input')
  }
  let fd: number
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT') throw new UsageError(`${file} does not exist: make the join file on the other device (\`cidsync key export --bundle FILE\`) and carry it here`, { cause: err })
    if (code === 'ELOOP') throw new BundleInvalidError(`${file} is a symbolic link: give the join file itself`, { cause: err })
    throw err
  }
  try {
    const stats = fstatSync(fd)
    if (!stats.isFile()) throw new BundleInvalidError(`${file} is not a regular file: give the join file itself`)
    if ((stats.mode & 0o077) !== 0) {
      throw new BundleInvalidError(`${file} is readable by others (mode ${(stats.mode & 0o777).toString(8)}), and it holds the account's keys: run \`chmod 600 ${file}\` (and consider who may have read it), then run this again`)
    }
    const bytes = Buffer.alloc(Math.min(stats.size, MAX_BUNDLE_BYTES + 1))
    let got = 0
    while (got < bytes.byteLength) {
      const n = readSync(fd, bytes, got, bytes.byteLength - got, got)
      if (n === 0) break
      got += n
    }
    return parseBundle(bytes.subarray(0, got).toString('utf8'), file)
  } finally {
    closeSync(fd)
  }
}

/** Refused before anything is written: credentials already beside the config are replaced only with --force. */
export function checkCredentialsFree (configPath: string, force: boolean): void {
  const taken = CREDENTIAL_FILES.map(name => join(dirname(configPath), name)).filter(path => existsSync(path))
  if (taken.length > 0 && !force) throw new UsageError(`${taken.join(', ')} already ${taken.length === 1 ? 'exists' : 'exist'} beside the config: add --force to replace ${taken.length === 1 ? 'it' : 'them'} with the join file's`)
}

const toml = (value: string): string => JSON.stringify(value)

const DEFAULT_MARGIN_SECONDS = exactSeconds(parseDuration(DEFAULT_PRUNE_MARGIN) ?? { years: 0, months: 0, weeks: 0, days: 1, hours: 0, minutes: 0, seconds: 0 })

/** Sets `key` in `[section]` ('' for the top) of the commented template, keeping the line's comment. */
function setKey (text: string, section: string, key: string, value: string): string {
  const lines = text.split('\n')
  let current = ''
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string
    const header = /^\[([a-z_]+)\]/.exec(line)
    if (header !== null) current = header[1] as string
    const match = new RegExp(`^(${key} = )("[^"]*"|\\[[^\\]]*\\]|\\S+)(.*)$`).exec(line)
    if (current === section && match !== null) {
      lines[i] = `${match[1] as string}${value}${match[3] as string}`
      return lines.join('\n')
    }
  }
  throw new InternalError(`the config template has no ${section === '' ? '' : `[${section}] `}${key} line to set`)
}

/** The template's text with the join file's service and the settings that must match the other device's. */
export function joinedConfigText (text: string, bundle: DeviceBundle): string {
  const s = bundle.settings
  let out = setKey(text, '', 'namespace', toml(s.namespace))
  out = setKey(out, '', 'network', toml(s.network))
  out = setKey(out, '', 'cid_profile', toml(s.cidProfile))
  out = setKey(out, 'snapshot', 'encryption', toml(s.snapshotEncryption))
  out = setKey(out, 'content', 'encryption', toml(s.contentEncryption))
  out = withRetention(out, bundle.retention)
  const service = bundle.service
  if (service.mode === 'embedded') return setKey(out, 'service', 'dir', toml(service.dir))
  out = setKey(out, 'service', 'mode', toml('remote'))
  for (const [key, value] of [['deal_url', service.dealUrl], ['api_url', service.apiUrl], ['pointer_url', service.pointerUrl], ['upload_url', service.uploadUrl]] as const) out = setKey(out, 'service', key, toml(value))
  return setKey(out, 'service', 'gateways', `[${service.gateways.map(toml).join(', ')}]`)
}

/**
 * The template's `[retention]` replaced by the other device's: each device forgets by its own
 * policy, so a stricter one here would forget what the other keeps. None there: none here. A join
 * file that does not say keeps the template's, and {@link completeJoin} says so.
 */
function withRetention (text: string, retention: DeviceBundle['retention']): string {
  if (retention === undefined) return text
  const table = /^\[retention\]\n(?:(?!\[)[^\n]*\n?)*/m
  if (!table.test(text)) throw new InternalError('the config template has no [retention] table to replace')
  if (retention === null) return text.replace(table, '# [retention]: none, as on the other device: every publish is kept.\n')
  const lines = ['[retention]', '# As on the other device (from the join file): keep both alike.']
  for (const [key, value] of Object.entries(retention)) {
    if (value !== undefined) lines.push(`${key} = ${typeof value === 'number' ? String(value) : toml(value)}`)
  }
  return text.replace(table, lines.join('\n') + '\n')
}

/** The written config says what the join file said (a template changed under the edits above would not). */
function checkConfig (path: string, bundle: DeviceBundle): void {
  const c = loadConfig({ configPath: path, env: {} })
  const s = bundle.service
  const same = c.namespace === bundle.settings.namespace && c.network === bundle.settings.network && c.cidProfile === bundle.settings.cidProfile &&
    c.snapshot.encryption === bundle.settings.snapshotEncryption && c.content.encryption === bundle.settings.contentEncryption &&
    (s.mode === 'remote'
      ? c.service.mode === 'remote' && c.service.dealUrl === s.dealUrl && c.service.apiUrl === s.apiUrl && c.service.pointerUrl === s.pointerUrl && c.service.uploadUrl === s.uploadUrl && c.service.gateways.join('\n') === s.gateways.join('\n')
      : c.service.mode === 'embedded' && c.service.dir === s.dir)
  if (!same) throw new InternalError(`${path} does not say what the join file says after writing it: a bug in cidsync; edit [service] and the settings by hand as on the other device`)
}

/**
 * What a join file set, said before anything uses it: the service, and whether it encrypts. A join
 * file from someone else could point this device at their service, or turn encryption off.
 */
function sayJoined (config: Config): string[] {
  const lines = [config.service.mode === 'remote' ? `service ${config.service.dealUrl} (from the join file)` : `service: embedded, data in ${config.service.dir}`]
  if (config.service.mode === 'remote') {
    const url = new URL(config.service.dealUrl)
    if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) process.stderr.write(`cidsync: warning: the join file names a service over plain http (${url.host}): its API key and tokens cross the network unencrypted; check it is yours\n`)
  }
  for (const [what, value] of [['snapshots', config.snapshot.encryption], ['stored content', config.content.encryption]] as const) {
    if (value === 'none') process.stderr.write(`cidsync: warning: the join file turns encryption off for ${what} (encryption = "none"): the service can read them\n`)
  }
  return lines
}

/**
 * Once the config is written: the settings checked, the folders made, the snapshot key installed,
 * the account's credentials saved beside the config (0600). Answers what to print.
 */
export async function completeJoin (configPath: string, config: Config, bundle: DeviceBundle, foldersFromBundle: boolean): Promise<string> {
  checkConfig(configPath, bundle)
  const lines: string[] = sayJoined(config)
  // A join file from someone else could make this device prune without a margin, while others publish.
  const margin = config.retention?.pruneMarginSeconds
  if (bundle.retention != null && margin !== undefined && margin < DEFAULT_MARGIN_SECONDS) {
    process.stderr.write(`cidsync: warning: the join file sets [retention] prune_margin = ${JSON.stringify(bundle.retention.prune_margin)}, under the default ${JSON.stringify(DEFAULT_PRUNE_MARGIN)}: a prune here may delete what another device is publishing; check it is what you want\n`)
  }
  if (bundle.retention === undefined && config.retention !== undefined) {
    process.stderr.write(`cidsync: warning: the join file does not say the other device's [retention], so ${configPath} has the default policy: make it the same as the other device's, since each device forgets by its own\n`)
  }
  if (foldersFromBundle) {
    for (const folder of config.folders) {
      if (existsSync(folder.path)) { lines.push(`folder ${folder.name} at ${folder.path} (already there: restored files go into it)`); continue }
      mkdirSync(folder.path, { recursive: true, mode: 0o700 })
      lines.push(`made folder ${folder.name} at ${folder.path}`)
    }
  } else {
    const theirs = new Set(bundle.folders.map(f => f.name))
    for (const folder of config.folders.filter(f => !theirs.has(f.name))) {
      process.stderr.write(`cidsync: warning: folder ${folder.name} is not one of the other device's (${[...theirs].join(', ') || 'none'}): their files come back only into folders of the same name (or with --to DIR)\n`)
    }
  }
  if (bundle.snapshotKey !== undefined) {
    const { installKey } = await import('./key.js')
    const { KEY_FILE } = await import('../../snapshot/index.js')
    const { id } = await installKey(config.stateDir, bundle.snapshotKey, false)
    lines.push(`snapshot key ${id} (from the join file) in ${join(config.stateDir, KEY_FILE)}`)
  }
  const { Credential, credentialsDir, rememberEmbeddedAccount, savePrimaryWallet } = await import('../../connect/index.js')
  const dir = credentialsDir(config)
  const saved: string[] = []
  for (const [name, value] of [['wallet-key', bundle.walletKey], ['api-key', bundle.apiKey], ['session-token', bundle.sessionToken]] as const) {
    if (value !== undefined) saved.push(new Credential(name, dir).save(value))
  }
  if (bundle.address !== undefined && config.service.mode === 'embedded') {
    makeDirsSync(config.stateDir, 0o700)
    rememberEmbeddedAccount(config.stateDir, bundle.address)
    lines.push(`embedded account ${bundle.address} (from the join file): a service dir holding another, or none, is refused`)
  } else if (bundle.address !== undefined) savePrimaryWallet(config, bundle.address)
  if (saved.length > 0) lines.push(`account${bundle.address === undefined ? '' : ` ${bundle.address}`}: saved ${saved.join(', ')} (0600)`)
  if (bundle.passphrase && !hasSnapshotPassphrase()) {
    lines.push('the snapshots are sealed with a passphrase: set CIDSYNC_SNAPSHOT_PASSPHRASE to the other device\'s before `cidsync restore`')
  }
  return lines.map(l => `${l}\n`).join('')
}
