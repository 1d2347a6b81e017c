import { ConfigError } from '../errors.js'

type EnvKind = 'string' | 'boolean' | 'integer' | 'list'

/** Config keys that `CIDSYNC_<SECTION>_<KEY>` may set; folders come only from the file. */
const ENV_KEYS: ReadonlyArray<readonly [string, EnvKind]> = [
  ['namespace', 'string'], ['network', 'string'], ['state_dir', 'string'], ['cid_profile', 'string'], ['log_level', 'string'],
  ['status.listen', 'string'], ['status.metrics_token', 'boolean'],
  ['service.mode', 'string'], ['service.dir', 'string'], ['service.url', 'string'], ['service.deal_url', 'string'], ['service.api_url', 'string'],
  ['service.pointer_url', 'string'], ['service.upload_url', 'string'], ['service.gateways', 'list'],
  ['snapshot.schedule', 'string'], ['snapshot.encryption', 'string'], ['snapshot.accept_unencrypted', 'boolean'], ['snapshot.deal', 'boolean'], ['snapshot.ipns_key', 'string'],
  ['snapshot.min_interval_seconds', 'integer'], ['snapshot.quiet_seconds', 'integer'],
  ['snapshot.max_drop_entries', 'integer'], ['snapshot.compact_after_deltas', 'integer'], ['verify.schedule', 'string'],
  ['reconcile.schedule', 'string'], ['content.encryption', 'string'], ['content.upload_rate', 'string'], ['content.max_file_size', 'string'],
  ['content.concurrency', 'integer'],
  ['watch.hash_workers', 'integer'], ['watch.settle_ms', 'integer'], ['watch.rescan_interval_seconds', 'integer']
]

const TRUE_SPELLINGS: readonly string[] = ['1', 'true', 'yes', 'on']
const FALSE_SPELLINGS: readonly string[] = ['0', 'false', 'no', 'off']

export function envName (key: string): string {
  return `CIDSYNC_${key.replace('.', '_').toUpperCase()}`
}

function convert (name: string, raw: string, kind: EnvKind): unknown {
  switch (kind) {
    case 'string': return raw
    case 'list': return raw.split(',').map(s => s.trim()).filter(s => s !== '')
    case 'integer':
      if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} = ${JSON.stringify(raw)}: expected a whole number`)
      return Number(raw.trim())
    case 'boolean': {
      const value = raw.trim().toLowerCase()
      if (TRUE_SPELLINGS.includes(value)) return true
      if (FALSE_SPELLINGS.includes(value)) return false
      throw new ConfigError(`${name} = ${JSON.stringify(raw)}: expected true (${TRUE_SPELLINGS.join(', ')}) or false (${FALSE_SPELLINGS.join(', ')}), in any case`)
    }
  }
}

/**
 * Lays `CIDSYNC_*` variables over the file's raw table. Answers the merged table and, for error
 * messages, which dotted keys came from which variable.
 */
export function applyEnvOverrides (raw: Record<string, unknown>, env: NodeJS.ProcessEnv): { merged: Record<string, unknown>, fromEnv: Map<string, string> } {
  const merged: Record<string, unknown> = { ...raw }
  const fromEnv = new Map<string, string>()
  for (const [key, kind] of ENV_KEYS) {
    const name = envName(key)
    const value = env[name]
    if (value === undefined) continue
    const [section, field] = key.split('.') as [string, string | undefined]
    if (field === undefined) {
      merged[section] = convert(name, value, kind)
    } else {
      const table = merged[section]
      const copy = typeof table === 'object' && table !== null && !Array.isArray(table) ? { ...table as Record<string, unknown> } : {}
      copy[field] = convert(name, value, kind)
      merged[section] = copy
    }
    fromEnv.set(key, name)
  }
  return { merged, fromEnv }
}

/**
 * The snapshot passphrase (`CIDSYNC_SNAPSHOT_PASSPHRASE`), or undefined when unset or empty. The
 * only place cidsync reads it: read at each call, so a daemon's reload and a test's change apply.
 */
export function snapshotPassphrase (env: NodeJS.ProcessEnv = process.env): string | undefined {
  const value = env.CIDSYNC_SNAPSHOT_PASSPHRASE
  return value === undefined || value === '' ? undefined : value
}

/** Whether a snapshot passphrase is set: for messages and checks that never use its value. */
export function hasSnapshotPassphrase (env: NodeJS.ProcessEnv = process.env): boolean {
  return snapshotPassphrase(env) !== undefined
}
