/**
 * The config: one TOML file, `CIDSYNC_*` overrides, validated once at the edge, paths resolved.
 */
export type { Config, ExcludedDir, FolderConfig, MirrorConfig, RetentionConfig } from './config.js'
export { excludeOwnDirs, excludedNotes } from './own-dirs.js'
export { loadConfig, loadConfigLocatingDaemon, findConfigFile } from './load.js'
export type { LoadConfigOptions } from './load.js'
export { defaultConfigPath, defaultStateDir, expandHome, resolveConfigPath } from './paths.js'
export { parseListenAddress, formatListenAddress, isLoopbackHost } from './listen-address.js'
export type { ListenAddress } from './listen-address.js'
export { DEFAULT_IGNORE, renderConfigTemplate } from './template.js'
export { DEFAULT_STATUS_PORT, DEFAULT_STATUS_LISTEN, DEFAULT_SNAPSHOT_SCHEDULE, DEFAULT_RECONCILE_SCHEDULE, DEFAULT_VERIFY_SCHEDULE, DEFAULT_SETTLE_MS, DEFAULT_MAX_IPNS_KEYS_PER_ACCOUNT, DEFAULT_SIGNUP_RATE_PER_HOUR, DEFAULT_MAX_CAR_BYTES, DEFAULT_MIRROR_MAX_LAG_SECONDS, DEFAULT_RETENTION_SCHEDULE, DEFAULT_PRUNE_MARGIN, POINTER_NAME_MAX, PRUNE_LIST_NETWORK_SUFFIX, retentionTableSchema } from './schema.js'
export { stateDirOwnerProblem } from './state-dir-owner.js'
export { snapshotPassphrase, hasSnapshotPassphrase } from './env.js'
export { STATE_NAMES, statePath } from './state-layout.js'
export type { StateName } from './state-layout.js'
