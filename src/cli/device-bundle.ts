import { z } from 'zod'
import { retentionTableSchema } from '../config/index.js'
import { CID_PROFILE_NAMES } from '../content/index.js'
import { BundleInvalidError } from '../errors.js'

/**
 * A join file: what a second device needs to be the same account as this one (the service's
 * URLs, the snapshot key, the account's credentials, the settings that must match), made by
 * `cidsync key export --bundle FILE` and read by `cidsync init --join FILE`. Its first lines say,
 * in words, what it grants whoever holds it.
 */
export const BUNDLE_FORMAT = 'cidsync-join/1'

/** A join file is a few KiB; anything far larger is not one. */
export const MAX_BUNDLE_BYTES = 64 * 1024

const url = z.string().max(2_048).refine(text => {
  try {
    return ['http:', 'https:'].includes(new URL(text).protocol)
  } catch {
    return false
  }
}, 'expected an http or https URL')

const service = z.discriminatedUnion('mode', [
  z.strictObject({ mode: z.literal('remote'), dealUrl: url, apiUrl: url, pointerUrl: url, uploadUrl: url, gateways: z.array(url).min(1).max(16) }),
  // The embedded service's account lives in its directory: a folder both devices reach (a NAS mount).
  z.strictObject({ mode: z.literal('embedded'), dir: z.string().min(1).max(4_096) })
])

const encryption = z.enum(['aes-256-gcm', 'none'])

const keepCount = z.int().min(0).max(1_000_000)

/** `[retention]` as the config file writes it, kept as written, and valid as a config's. */
const retentionTable = z.strictObject({
  keep_last: keepCount,
  keep_hourly: keepCount,
  keep_daily: keepCount,
  keep_weekly: keepCount,
  keep_monthly: keepCount,
  keep_yearly: keepCount,
  keep_within: z.string().max(64).optional(),
  prune_margin: z.string().max(64),
  schedule: z.string().max(200),
  time_zone: z.string().max(64)
}).refine(r => retentionTableSchema.safeParse(r).success, { message: 'is not a [retention] a config accepts' })

export const bundleSchema = z.strictObject({
  format: z.literal(BUNDLE_FORMAT),
  createdAt: z.string().max(64),
  grants: z.array(z.string().max(1_000)).max(16),
  settings: z.strictObject({
    namespace: z.string().min(1).max(64),
    network: z.string().min(1).max(64),
    cidProfile: z.enum(CID_PROFILE_NAMES),
    snapshotEncryption: encryption,
    contentEncryption: encryption
  }),
  service,
  /** This device's folders: the other names its own alike, so each file is known as the same one. */
  folders: z.array(z.strictObject({
    name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$/),
    path: z.string().min(1).max(4_096)
  })).max(256),
  /**
   * This device's `[retention]` as the config writes it, with its time zone; null: it has none and
   * keeps every publish. Each device forgets by its own policy, so the other takes the same one.
   * Absent in a join file made before it was carried.
   */
  retention: z.union([z.null(), retentionTable]).optional(),
  /** The snapshot key, as `key export` prints it; absent when a passphrase seals the snapshots. */
  snapshotKey: z.string().min(1).max(1_024).optional(),
  passphrase: z.boolean(),
  walletKey: z.string().regex(/^(0x)?[0-9a-fA-F]{64}$/).optional(),
  address: z.string().regex(/^0x[0-9a-f]{40}$/).optional(),
  apiKey: z.string().min(1).max(1_024).optional(),
  sessionToken: z.string().min(1).max(8_192).optional()
})

export type DeviceBundle = z.infer<typeof bundleSchema>

/** What the bundle lets its holder do, one line each: written at its head and in `grants`. */
export function grantsOf (bundle: Omit<DeviceBundle, 'grants' | 'format' | 'createdAt'>, tokenExpiry: string | undefined): string[] {
  const grants: string[] = []
  if (bundle.snapshotKey !== undefined) grants.push('the snapshot key: read every snapshot and every stored file of this account')
  if (bundle.passphrase) grants.push('no passphrase: the snapshots are sealed with CIDSYNC_SNAPSHOT_PASSPHRASE, which the other device must set to the same one')
  if (bundle.walletKey !== undefined) grants.push(`the wallet key of ${bundle.address ?? 'the account'}: sign in as this account, upload, publish, and get new session tokens, for good`)
  if (bundle.apiKey !== undefined) grants.push('an API key: upload and ask for deals as this account')
  if (bundle.sessionToken !== undefined) grants.push(`a session token${tokenExpiry === undefined ? '' : ` valid until ${tokenExpiry}`}: move this account's pointer (publish)`)
  if (bundle.service.mode === 'embedded') grants.push(`nothing of the service itself: its account is in ${bundle.service.dir}, which the other device must reach at that path`)
  return grants
}

/** The file's text: a head of comments anyone opening it reads first, then the JSON. */
export function renderBundle (bundle: DeviceBundle): string {
  const head = [
    'cidsync join file: another device becomes this account with it.',
    'On that device run: cidsync init --join THIS-FILE',
    'Whoever holds this file gets:',
    ...bundle.grants.map(g => `  - ${g}`),
    'Keep it like a password. Move it only where no one else can read it, and delete it once used.'
  ]
  return `${head.map(line => `# ${line}`).join('\n')}\n${JSON.stringify(bundle, null, 2)}\n`
}

/** A join file's text parsed and checked, or a {@link BundleInvalidError} saying what is wrong. */
export function parseBundle (text: string, source: string): DeviceBundle {
  if (Buffer.byteLength(text) > MAX_BUNDLE_BYTES) throw new BundleInvalidError(`${source} is larger than a join file can be (${MAX_BUNDLE_BYTES} bytes): is it one?`)
  const json = text.split('\n').filter(line => !line.startsWith('#')).join('\n')
  let raw: unknown
  try {
    raw = JSON.parse(json)
  } catch {
    throw new BundleInvalidError(`${source} is not a cidsync join file (no JSON after its comments): make one with \`cidsync key export --bundle FILE\` on the other device`)
  }
  const format = (raw as { format?: unknown } | null)?.format
  if (format !== BUNDLE_FORMAT) {
    throw new BundleInvalidError(`${source} is not a ${BUNDLE_FORMAT} join file (format ${JSON.stringify(format ?? null)?.slice(0, 40)}): make one with this version's \`cidsync key export --bundle FILE\``)
  }
  const parsed = bundleSchema.safeParse(raw)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw new BundleInvalidError(`${source} is damaged: ${issue?.path.join('.') ?? '?'}: ${issue?.message ?? 'invalid'}: make a new one with \`cidsync key export --bundle FILE\``)
  }
  return parsed.data
}
