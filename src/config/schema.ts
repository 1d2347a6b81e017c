import { z } from 'zod'
import cron from 'node-cron'
// The light part of content's face: profile names without the CID machinery.
import { CID_PROFILE_NAMES } from '../content/profiles.js'
import { DURATION_HELP, isCalendarDuration, isEmptyPolicy, isTimeZone, parseDuration } from '../retention/index.js'

/** The status endpoint's default TCP port on loopback. */
export const DEFAULT_STATUS_PORT = 7345
export const DEFAULT_STATUS_LISTEN = `127.0.0.1:${DEFAULT_STATUS_PORT}`
export const DEFAULT_SNAPSHOT_SCHEDULE = '*/15 * * * *'
export const DEFAULT_RECONCILE_SCHEDULE = '0 * * * *'
/** The restore drill: daily, at a minute past the hour most schedules avoid. */
export const DEFAULT_VERIFY_SCHEDULE = '37 4 * * *'
/** How long a path must stay quiet after an event before it is hashed (editors' atomic saves). */
export const DEFAULT_SETTLE_MS = 150
/** The drift check: every six hours the folders are walked afresh and compared with the index. */
export const DEFAULT_RESCAN_INTERVAL_SECONDS = 21_600
/** A burst of changes gives one snapshot: at most one per this many seconds... */
export const DEFAULT_MIN_INTERVAL_SECONDS = 300
/** ...and not before the folders have been quiet this long. */
export const DEFAULT_QUIET_SECONDS = 30

/** Forget and prune weekly, on Sunday morning, after the daily restore drill. */
export const DEFAULT_RETENTION_SCHEDULE = '17 5 * * 0'
/** An object younger than this is never pruned: another device may be about to name it. */
export const DEFAULT_PRUNE_MARGIN = '1d'
/** The longest namespace or network a pointer may have: the local service refuses longer, and so do the commands. */
export const POINTER_NAME_MAX = 256
/** What the prune list's pointer adds to the network's name (`sync/prune-list`): a network leaves room for it. */
export const PRUNE_LIST_NETWORK_SUFFIX = '~prune-list'
/** The most a keep_* count may say: far beyond a century of hourly publishes' buckets. */
const MAX_KEEP_COUNT = 1_000_000

/** `cidsync local-service`: the IPNS keys one account may hold by default. */
export const DEFAULT_MAX_IPNS_KEYS_PER_ACCOUNT = 100
/** New accounts open sign-up makes in an hour, at most: each one is another quota. */
export const DEFAULT_SIGNUP_RATE_PER_HOUR = 10
/** The most one gateway CAR response sends: the largest file `[content] max_file_size` stores by default. */
export const DEFAULT_MAX_CAR_BYTES = 64 * 2 ** 30

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const

const cronExpression = z.string().refine(value => cron.validate(value), {
  message: 'expected a cron expression such as "*/15 * * * *" (minute hour day month weekday)'
})

const folderName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, {
  message: 'expected a label of letters, digits, ".", "_" or "-" (at most 64, starting with a letter or digit)'
})

const url = z.union([z.literal(''), z.url({ protocol: /^https?$/, message: 'expected an http(s) URL' })])

const httpUrl = z.url({ protocol: /^https?$/, message: 'expected an http(s) URL' })

/** A host that is this machine: plain http to it crosses no network. */
function loopbackUrl (text: string): boolean {
  const host = new URL(text).hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase()
  return host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host)
}

/** The most a mirror may lag before `status --check` fails, by default: six hours. */
export const DEFAULT_MIRROR_MAX_LAG_SECONDS = 6 * 3600

/** A `url` with a scheme other than http(s) names another backend: the registry reads it when the mirror is reached. */
const otherScheme = (text: string): boolean => text !== '' && !/^https?:/i.test(text)

const mirror = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$/, { message: 'expected a label of letters, digits, ".", "_" or "-" (at most 32, starting with a letter or digit)' }),
  // A folder, for the backend that reads a path (a plain directory on a USB disk, a NAS mount).
  path: z.string().default(''),
  // A self-hosted `cidsync local-service` answers every part at one base URL; another scheme names another backend.
  url: z.string().default('').refine(text => otherScheme(text) ? URL.canParse(text) : url.safeParse(text).success, { message: 'expected an http(s) URL, or a URL whose scheme a backend reads' }),
  deal_url: url.default(''),
  api_url: url.default(''),
  pointer_url: url.default(''),
  upload_url: url.default(''),
  gateways: z.array(httpUrl).default([]),
  deal: z.boolean().optional(),
  max_lag_seconds: z.int().min(1).max(30 * 86_400).default(DEFAULT_MIRROR_MAX_LAG_SECONDS),
  allow_plain_http: z.boolean().default(false)
}).superRefine((m, ctx) => {
  const given = (['deal_url', 'api_url', 'pointer_url', 'upload_url'] as const).filter(k => m[k] !== '')
  if (m.path !== '') {
    if (m.url !== '' || given.length > 0 || m.gateways.length > 0) ctx.addIssue({ code: 'custom', path: ['path'], message: 'expected either path (a directory) or a service\'s URLs, not both' })
    if (m.deal === true) ctx.addIssue({ code: 'custom', path: ['deal'], message: 'a directory makes no deals: remove deal, or set it to false' })
    return
  }
  if (otherScheme(m.url)) {
    if (given.length > 0 || m.gateways.length > 0) ctx.addIssue({ code: 'custom', path: ['url'], message: 'expected either url or deal_url, api_url, pointer_url, upload_url and gateways, not both' })
    return
  }
  if (m.url !== '' && (given.length > 0 || m.gateways.length > 0)) {
    ctx.addIssue({ code: 'custom', path: ['url'], message: 'expected either url (a self-hosted `cidsync local-service`) or deal_url, api_url, pointer_url, upload_url and gateways, not both' })
  }
  if (m.url === '') {
    for (const key of ['api_url', 'pointer_url', 'upload_url'] as const) {
      if (m[key] === '') ctx.addIssue({ code: 'custom', path: [key], message: 'expected the mirror\'s URL: a mirror needs url, or api_url, pointer_url, upload_url and gateways (deal_url too, to ask for deals and `cidsync login --mirror`)' })
    }
    if (m.gateways.length === 0) ctx.addIssue({ code: 'custom', path: ['gateways'], message: 'expected at least one gateway URL (or url)' })
  }
  // Credentials go to these URLs: over plain http to another machine anyone on the way reads them.
  const all = [m.url, m.deal_url, m.api_url, m.pointer_url, m.upload_url, ...m.gateways].filter(u => u !== '')
  if (!m.allow_plain_http) {
    const plain = all.find(u => u.startsWith('http:') && !loopbackUrl(u))
    if (plain !== undefined) ctx.addIssue({ code: 'custom', path: ['allow_plain_http'], message: `${plain} is plain http to another machine: the mirror's credentials would cross the network unprotected; use https, or set allow_plain_http = true for a network you trust` })
  }
})

const folder = z.strictObject({
  name: folderName,
  path: z.string().min(1, { message: 'expected the folder\'s path' }),
  ignore: z.array(z.string().min(1)).default([]),
  follow_symlinks: z.boolean().default(false),
  // Off unless asked for: a config from before content custody uploads nothing new.
  store: z.boolean().default(false)
})

const UNITS: Readonly<Record<string, number>> = { '': 1, B: 1, KB: 1e3, MB: 1e6, GB: 1e9, TB: 1e12, KIB: 2 ** 10, MIB: 2 ** 20, GIB: 2 ** 30, TIB: 2 ** 40 }

/** A byte count as people write one: 1048576, "20MiB", "1.5 GB". */
export function parseByteSize (text: string): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([kmgt]i?b|b)?\s*$/i.exec(text)
  if (match === null) return undefined
  const bytes = Math.round(Number(match[1]) * (UNITS[(match[2] ?? '').toUpperCase()] ?? NaN))
  return Number.isSafeInteger(bytes) ? bytes : undefined
}

const byteSize = z.union([z.int().nonnegative(), z.string()]).transform((value, ctx) => {
  const bytes = typeof value === 'number' ? value : parseByteSize(value)
  if (bytes === undefined) {
    ctx.addIssue({ code: 'custom', message: 'expected a size such as 1048576, "20MiB" or "1.5GB"' })
    return z.NEVER
  }
  return bytes
})

const duration = z.string().transform((text, ctx) => {
  const parsed = parseDuration(text)
  if (parsed === undefined) {
    ctx.addIssue({ code: 'custom', message: `expected ${DURATION_HELP}, at most a century` })
    return z.NEVER
  }
  return parsed
})

// A margin is an exact span: a month's length would depend on when the prune runs.
const exactDuration = duration.refine(d => !isCalendarDuration(d), { message: 'expected an exact span without years or months, such as "1d", "36h" or "0s"' })

const keepCount = z.int().min(0).max(MAX_KEEP_COUNT)

/** `[retention]` as written; a join file carries it alike. Absent: every publish is kept, so an upgrade never deletes anything. */
export const retentionTableSchema = z.strictObject({
  keep_last: keepCount.default(0),
  keep_hourly: keepCount.default(0),
  keep_daily: keepCount.default(0),
  keep_weekly: keepCount.default(0),
  keep_monthly: keepCount.default(0),
  keep_yearly: keepCount.default(0),
  keep_within: duration.optional(),
  prune_margin: exactDuration.prefault(DEFAULT_PRUNE_MARGIN),
  schedule: cronExpression.default(DEFAULT_RETENTION_SCHEDULE),
  // Unset: the system's, read when the config loads.
  time_zone: z.string().refine(isTimeZone, { message: 'expected an IANA time zone name such as "Europe/Berlin", "America/New_York" or "UTC"' }).optional()
}).superRefine((r, ctx) => {
  const policy = { keepLast: r.keep_last, keepHourly: r.keep_hourly, keepDaily: r.keep_daily, keepWeekly: r.keep_weekly, keepMonthly: r.keep_monthly, keepYearly: r.keep_yearly, keepWithin: r.keep_within }
  if (isEmptyPolicy(policy)) {
    ctx.addIssue({ code: 'custom', message: '[retention] keeps nothing: every keep_* is 0 and keep_within is unset or 0, so every publish but the newest would be forgotten. Set a rule (keep_daily = 14, keep_within = "48h", ...), or remove [retention] to keep every publish' })
  }
})
const retention = retentionTableSchema.optional()

/** The TOML file's shape, snake_case as users write it. Unknown keys are errors. */
export const configFileSchema = z.strictObject({
  namespace: z.string().min(1).max(POINTER_NAME_MAX).default('default'),
  network: z.string().min(1).max(POINTER_NAME_MAX).default('mainnet'),
  state_dir: z.string().min(1).optional(),
  cid_profile: z.enum(CID_PROFILE_NAMES).default('kubo-cidv1'),
  log_level: z.enum(LOG_LEVELS).default('info'),
  folders: z.array(folder).default([]).superRefine((folders, ctx) => {
    const seen = new Set<string>()
    folders.forEach((f, i) => {
      if (seen.has(f.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: 'expected each folder name to be unique' })
      seen.add(f.name)
    })
  }),
  status: z.strictObject({
    listen: z.string().default(DEFAULT_STATUS_LISTEN),
    metrics_token: z.boolean().default(false)
  }).prefault({}),
  service: z.strictObject({
    // Unset: remote when `url` is given, else embedded.
    mode: z.enum(['embedded', 'remote']).optional(),
    dir: z.string().default(''),
    // A self-hosted `cidsync local-service` answers every part at one base URL, as a mirror's `url`.
    url: url.default(''),
    deal_url: url.default(''),
    api_url: url.default(''),
    pointer_url: url.default(''),
    upload_url: url.default(''),
    gateways: z.array(z.url({ protocol: /^https?$/, message: 'expected an http(s) URL' })).default([])
  }).prefault({}).superRefine((service, ctx) => {
    if (service.url !== '') {
      if (service.mode === 'embedded') ctx.addIssue({ code: 'custom', path: ['url'], message: 'expected mode = "remote" with url: url names a remote service; set mode = "remote", or remove url for the embedded one' })
      const given = (['deal_url', 'api_url', 'pointer_url', 'upload_url'] as const).filter(k => service[k] !== '')
      if (given.length > 0 || service.gateways.length > 0) ctx.addIssue({ code: 'custom', path: ['url'], message: 'expected either url (a self-hosted `cidsync local-service`) or deal_url, api_url, pointer_url, upload_url and gateways, not both' })
      return
    }
    if (service.mode !== 'remote') return
    for (const key of ['deal_url', 'api_url', 'pointer_url', 'upload_url'] as const) {
      if (service[key] === '') ctx.addIssue({ code: 'custom', path: [key], message: 'expected the service\'s URL: mode = "remote" needs url (a self-hosted `cidsync local-service`), or deal_url, api_url, pointer_url, upload_url and gateways' })
    }
    if (service.gateways.length === 0) ctx.addIssue({ code: 'custom', path: ['gateways'], message: 'expected at least one gateway URL (or url) with mode = "remote"' })
  }),
  mirrors: z.array(mirror).default([]).superRefine((mirrors, ctx) => {
    const seen = new Set<string>()
    mirrors.forEach((m, i) => {
      if (seen.has(m.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: 'expected each mirror name to be unique' })
      seen.add(m.name)
    })
  }),
  local_service: z.strictObject({
    signup: z.enum(['open', 'allowlist', 'invite', 'closed']).optional(),
    signup_rate_per_hour: z.int().min(0).default(DEFAULT_SIGNUP_RATE_PER_HOUR),
    allow: z.array(z.string().regex(/^0x[0-9a-fA-F]{40}$/, { message: 'expected a wallet address: 0x and 40 hex digits' })).default([]),
    max_bytes_per_account: byteSize.default(0),
    max_bytes_total: byteSize.default(0),
    max_ipns_keys_per_account: z.int().min(0).default(DEFAULT_MAX_IPNS_KEYS_PER_ACCOUNT),
    max_connections: z.int().min(4).max(65_536).default(128),
    max_car_bytes: byteSize.pipe(z.int().min(1024 * 1024)).default(DEFAULT_MAX_CAR_BYTES),
    hosts: z.array(z.string().regex(/^[A-Za-z0-9.\-[\]:]{1,255}$/, { message: 'expected a Host value: a name or address, with :port when the proxy sends one' })).default([])
  }).prefault({}),
  snapshot: z.strictObject({
    schedule: cronExpression.default(DEFAULT_SNAPSHOT_SCHEDULE),
    encryption: z.enum(['aes-256-gcm', 'none']).default('aes-256-gcm'),
    deal: z.boolean().default(true),
    ipns_key: z.string().default(''),
    min_interval_seconds: z.int().min(0).max(86_400).default(DEFAULT_MIN_INTERVAL_SECONDS),
    quiet_seconds: z.int().min(0).max(86_400).default(DEFAULT_QUIET_SECONDS),
    max_drop_entries: z.int().min(0).default(100),
    max_drop_fraction: z.number().min(0).max(1).default(0.5),
    accept_unencrypted: z.boolean().default(false),
    compact_after_deltas: z.int().min(1).max(1000).default(32),
    compact_fraction: z.number().min(0.01).max(100).default(0.5)
  }).prefault({}),
  content: z.strictObject({
    encryption: z.enum(['aes-256-gcm', 'none']).default('aes-256-gcm'),
    // Bytes a second; 0: as fast as the link goes.
    upload_rate: byteSize.default(0),
    max_file_size: byteSize.default(64 * 2 ** 30),
    exclude: z.array(z.string().min(1)).default([]),
    concurrency: z.int().min(1).max(16).default(2)
  }).prefault({}),
  verify: z.strictObject({
    schedule: z.union([z.literal(''), cronExpression]).default(DEFAULT_VERIFY_SCHEDULE)
  }).prefault({}),
  reconcile: z.strictObject({
    schedule: cronExpression.default(DEFAULT_RECONCILE_SCHEDULE)
  }).prefault({}),
  watch: z.strictObject({
    hash_workers: z.int().min(0).max(64).default(0),
    settle_ms: z.int().min(0).max(60_000).default(DEFAULT_SETTLE_MS),
    rescan_interval_seconds: z.int().refine(n => n === 0 || (n >= 60 && n <= 2_592_000), 'expected 0 (off) or 60 to 2592000 (30 days)').default(DEFAULT_RESCAN_INTERVAL_SECONDS)
  }).prefault({}),
  retention
}).superRefine((file, ctx) => {
  // A prune's list has a pointer of its own, named after the network: it must fit too.
  const most = POINTER_NAME_MAX - PRUNE_LIST_NETWORK_SUFFIX.length
  if (file.retention !== undefined && file.network.length > most) {
    ctx.addIssue({ code: 'custom', path: ['network'], message: `at most ${most} characters with [retention]: a prune's list has a pointer named after the network with ${JSON.stringify(PRUNE_LIST_NETWORK_SUFFIX)} added; shorten it` })
  }
})

export type ConfigFile = z.output<typeof configFileSchema>
