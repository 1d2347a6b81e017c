import { existsSync, readFileSync } from 'node:fs'
import { availableParallelism, homedir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { parse as parseToml } from 'smol-toml'
import { ConfigError } from '../errors.js'
import type { Config, MirrorConfig } from './config.js'
import { applyEnvOverrides } from './env.js'
import { formatIssues } from './issues.js'
import { excludeOwnDirs } from './own-dirs.js'
import { exactSeconds, systemTimeZone } from '../retention/index.js'
import { parseListenAddress } from './listen-address.js'
import { defaultConfigPath, defaultSocketPath, defaultStateDir, resolveConfigPath, SYSTEM_CONFIG_PATH } from './paths.js'
import { configFileSchema, type ConfigFile } from './schema.js'
import { STATE_NAMES } from './state-layout.js'

export interface LoadConfigOptions {
  /** `--config`; wins over `$CIDSYNC_CONFIG` and the default paths. */
  readonly configPath?: string | undefined
  readonly env?: NodeJS.ProcessEnv
  readonly cwd?: string
  readonly home?: string
}

/** Which file to read: the flag, `$CIDSYNC_CONFIG`, the user's default, the system's; or none. */
export function findConfigFile (options: LoadConfigOptions = {}): { path: string, explicit: boolean } | undefined {
  const env = options.env ?? process.env
  const cwd = options.cwd ?? process.cwd()
  const explicit = options.configPath ?? (env.CIDSYNC_CONFIG !== '' ? env.CIDSYNC_CONFIG : undefined)
  if (explicit !== undefined) return { path: resolveConfigPath(explicit, cwd, options.home), explicit: true }
  for (const candidate of [defaultConfigPath(env, options.home), SYSTEM_CONFIG_PATH]) {
    if (existsSync(candidate)) return { path: candidate, explicit: false }
  }
  return undefined
}

/** smol-toml's message, its line and column, and the lines it points at (its own excerpt). */
function describeTomlError (err: unknown): string {
  const { line, column, message } = err as { line?: unknown, column?: unknown, message?: unknown }
  const text = String(message ?? err).replace(/^Invalid TOML document: /, '')
  const [what = '', ...excerpt] = text.split('\n')
  const where = typeof line === 'number' && typeof column === 'number' ? `line ${line}, column ${column}: ` : ''
  const shown = excerpt.filter(l => l.trim() !== '').map(l => `    ${l}`).join('\n')
  return `${where}${what}${shown === '' ? '' : `\n${shown}`}`
}

function readToml (path: string): Record<string, unknown> {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT') throw new ConfigError(`config file ${path} does not exist: create one with \`cidsync init --config ${path}\``)
    throw new ConfigError(`config file ${path} could not be read (${code ?? String(err)}): check its permissions`, { cause: err })
  }
  try {
    return parseToml(text) as Record<string, unknown>
  } catch (err) {
    throw new ConfigError(`config file ${path} is not valid TOML: ${describeTomlError(err)}`, { cause: err })
  }
}

/**
 * Loads the config: file, then `CIDSYNC_*` environment variables, then defaults; validates it
 * once, here, and resolves every path. Errors name the key, the value, what is allowed and where
 * the value came from.
 */
export function loadConfig (options: LoadConfigOptions = {}): Config {
  const found = findConfigFile(options)
  return fromRaw(found === undefined ? {} : readToml(found.path), found, options)
}

/**
 * For finding a running daemon when the file on disk no longer loads (an edit not yet reloaded, or
 * refused by the daemon): the config as usual, else one with only the file's `state_dir` and
 * `[status] listen` (the two that locate the daemon) over the defaults, with the problem beside it.
 * Throws the problem when even that cannot be had.
 */
export function loadConfigLocatingDaemon (options: LoadConfigOptions = {}): { config: Config, problem?: ConfigError } {
  try {
    return { config: loadConfig(options) }
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    const found = findConfigFile(options)
    let raw: Record<string, unknown> = {}
    try {
      raw = found === undefined ? {} : readToml(found.path)
    } catch { /* not TOML at all: the defaults locate the daemon, if anything does */ }
    const status = raw.status as Record<string, unknown> | undefined
    const located: Record<string, unknown> = {
      ...(typeof raw.state_dir === 'string' ? { state_dir: raw.state_dir } : {}),
      ...(typeof status?.listen === 'string' ? { status: { listen: status.listen } } : {})
    }
    for (const attempt of [located, {}]) {
      try {
        return { config: fromRaw(attempt, found, options), problem: err }
      } catch { /* the next, with less of the file */ }
    }
    throw err
  }
}

function fromRaw (raw: Record<string, unknown>, found: { path: string } | undefined, options: LoadConfigOptions): Config {
  const env = options.env ?? process.env
  const home = options.home ?? homedir()
  const { merged, fromEnv } = applyEnvOverrides(raw, env)
  const origin = (key: string): string => {
    const variable = fromEnv.get(key)
    return variable !== undefined ? `(from ${variable})` : found !== undefined ? `(in ${found.path})` : '(default)'
  }
  const parsed = configFileSchema.safeParse(merged)
  if (!parsed.success) {
    throw new ConfigError(`invalid config:\n  ${formatIssues(parsed.error.issues, merged, origin).join('\n  ')}`)
  }
  const base = found !== undefined ? dirname(found.path) : (options.cwd ?? process.cwd())
  const resolvePath = (p: string): string => resolveConfigPath(p, base, home)
  const stateDir = parsed.data.state_dir !== undefined ? resolvePath(parsed.data.state_dir) : defaultStateDir(env, home)
  const listenText = parsed.data.status.listen === 'unix:' ? `unix:${defaultSocketPath(env, stateDir)}` : parsed.data.status.listen
  const listen = parseListenAddress(listenText)
  if ('error' in listen) {
    throw new ConfigError(`invalid config:\n  status.listen = ${JSON.stringify(parsed.data.status.listen)} ${origin('status.listen')}: ${listen.error}`)
  }
  const config = toConfig(parsed.data, found?.path, listen, stateDir, resolvePath)
  // resolve() drops a trailing slash and `..`: "/x/" is "/x".
  const paths = config.folders.map(f => resolve(f.path))
  const at = paths.findIndex((p, i) => paths.indexOf(p) !== i)
  if (at >= 0) {
    const first = config.folders[paths.indexOf(paths[at] ?? '')]?.name ?? ''
    throw new ConfigError(`invalid config:\n  folders ${JSON.stringify(first)} and ${JSON.stringify(config.folders[at]?.name ?? '')} have the same path ${paths[at] ?? ''} ${origin('folders')}: each file would be indexed and stored twice, under both names; keep one [[folders]] table for it`)
  }
  return { ...config, folders: excludeOwnDirs(config.folders, config) }
}

function toConfig (file: ConfigFile, source: string | undefined, listen: Config['status']['listen'], stateDir: string, resolvePath: (p: string) => string): Config {
  return {
    source,
    namespace: file.namespace,
    network: file.network,
    stateDir,
    cidProfile: file.cid_profile,
    logLevel: file.log_level,
    folders: file.folders.map(f => ({ name: f.name, path: resolvePath(f.path), ignore: f.ignore, followSymlinks: f.follow_symlinks, store: f.store })),
    status: { listen, metricsToken: file.status.metrics_token },
    service: serviceOf(file.service, stateDir, resolvePath),
    mirrors: file.mirrors.map(mirrorOf(resolvePath)),
    snapshot: {
      schedule: file.snapshot.schedule,
      encryption: file.snapshot.encryption,
      acceptUnencrypted: file.snapshot.accept_unencrypted,
      deal: file.snapshot.deal,
      ipnsKey: file.snapshot.ipns_key,
      minIntervalSeconds: file.snapshot.min_interval_seconds,
      quietSeconds: file.snapshot.quiet_seconds,
      maxDropEntries: file.snapshot.max_drop_entries,
      maxDropFraction: file.snapshot.max_drop_fraction,
      compactAfterDeltas: file.snapshot.compact_after_deltas,
      compactFraction: file.snapshot.compact_fraction
    },
    content: {
      encryption: file.content.encryption,
      uploadRate: file.content.upload_rate,
      maxFileSize: file.content.max_file_size,
      exclude: file.content.exclude,
      concurrency: file.content.concurrency
    },
    localService: {
      signup: file.local_service.signup,
      allow: file.local_service.allow.map(a => a.toLowerCase()),
      signupsPerHour: file.local_service.signup_rate_per_hour,
      maxBytesPerAccount: file.local_service.max_bytes_per_account,
      maxBytesTotal: file.local_service.max_bytes_total,
      maxIpnsKeysPerAccount: file.local_service.max_ipns_keys_per_account,
      maxConnections: file.local_service.max_connections,
      maxCarBytes: file.local_service.max_car_bytes,
      hosts: file.local_service.hosts
    },
    reconcile: { schedule: file.reconcile.schedule },
    verify: { schedule: file.verify.schedule },
    watch: { hashWorkers: file.watch.hash_workers === 0 ? availableParallelism() : file.watch.hash_workers, settleMs: file.watch.settle_ms, rescanIntervalSeconds: file.watch.rescan_interval_seconds },
    retention: retentionOf(file.retention)
  }
}

function retentionOf (r: ConfigFile['retention']): Config['retention'] {
  if (r === undefined) return undefined
  const retention = {
    policy: { keepLast: r.keep_last, keepHourly: r.keep_hourly, keepDaily: r.keep_daily, keepWeekly: r.keep_weekly, keepMonthly: r.keep_monthly, keepYearly: r.keep_yearly, keepWithin: r.keep_within },
    pruneMarginSeconds: exactSeconds(r.prune_margin),
    schedule: r.schedule
  }
  if (r.time_zone !== undefined) return { ...retention, timeZone: r.time_zone }
  // The system's zone is asked when first read: asking loads the zone data, and most commands
  // that load the config never forget anything.
  let zone: string | undefined
  return Object.defineProperty({ ...retention, systemZone: true }, 'timeZone', { enumerable: true, get: () => (zone ??= systemTimeZone()) }) as Config['retention'] & object
}

/**
 * A `[[mirrors]]` table: a path, a service's http(s) URLs (`url` fills the four and the one
 * gateway), or a URL of another scheme, kept whole for the backend that reads it.
 */
function mirrorOf (resolvePath: (p: string) => string): (m: ConfigFile['mirrors'][number]) => MirrorConfig {
  return (m) => {
    const other = m.url !== '' && !/^https?:/i.test(m.url)
    const one = m.url !== '' && !other ? m.url : undefined
    return {
      name: m.name,
      path: m.path === '' ? '' : resolvePath(m.path),
      ...(other ? { url: m.url } : {}),
      dealUrl: one ?? m.deal_url,
      apiUrl: one ?? m.api_url,
      pointerUrl: one ?? m.pointer_url,
      uploadUrl: one ?? m.upload_url,
      gateways: one !== undefined ? [one] : m.gateways,
      deal: m.path === '' && m.deal !== false,
      maxLagSeconds: m.max_lag_seconds
    }
  }
}

/** `url` fills the four URLs and the one gateway, as a mirror's does; it means mode "remote". */
function serviceOf (service: ConfigFile['service'], stateDir: string, resolvePath: (p: string) => string): Config['service'] {
  const one = service.url !== '' ? service.url : undefined
  return {
    mode: service.mode ?? (one !== undefined ? 'remote' : 'embedded'),
    dir: service.dir !== '' ? resolvePath(service.dir) : join(stateDir, STATE_NAMES.service),
    dealUrl: one ?? service.deal_url,
    apiUrl: one ?? service.api_url,
    pointerUrl: one ?? service.pointer_url,
    uploadUrl: one ?? service.upload_url,
    gateways: one !== undefined ? [one] : service.gateways
  }
}
