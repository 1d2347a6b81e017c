import { DEFAULT_PRUNE_MARGIN, DEFAULT_RETENTION_SCHEDULE, DEFAULT_RECONCILE_SCHEDULE, DEFAULT_VERIFY_SCHEDULE, DEFAULT_RESCAN_INTERVAL_SECONDS, DEFAULT_SETTLE_MS, DEFAULT_SNAPSHOT_SCHEDULE, DEFAULT_STATUS_LISTEN } from './schema.js'

export interface TemplateFolder { readonly name: string, readonly path: string }

const toml = (value: string): string => JSON.stringify(value)

/** What `init` writes as each folder's `ignore`, and says it wrote. */
export const DEFAULT_IGNORE: readonly string[] = ['**/.git/**', '**/node_modules/**', '**/*.tmp', '**/.DS_Store']

/**
 * The commented config `cidsync init` writes; `config/cidsync.example.toml` is this with no
 * folders given (a test keeps the two equal).
 */
export function renderConfigTemplate (folders: readonly TemplateFolder[] = [{ name: 'notes', path: '~/notes' }], remote?: string): string {
  const folderTables = folders.map(f => `[[folders]]
name = ${toml(f.name)}                        # label; paths in the index are relative to the folder
path = ${toml(f.path)}
ignore = [${DEFAULT_IGNORE.map(toml).join(', ')}]
store = true                            # keep the content too (sealed), not only the index; unset: false, so an older config uploads nothing new
# follow_symlinks = false               # true: index what symlinks point to; false: keep each as a link
`).join('\n')
  return `# cidsync configuration (TOML). Every key is optional; the values shown are the defaults.
# A CIDSYNC_<SECTION>_<KEY> environment variable overrides a key (CIDSYNC_STATUS_LISTEN, ...).
# Relative paths are taken from this file's folder; "~" is your home.
# Secrets (API key, session token, encryption key) never go here: see docs/configuration.md.

namespace = "default"                   # pointer namespace
network = "mainnet"                     # pointer network
# state_dir = "~/.local/state/cidsync"  # index, keys, job state ($STATE_DIRECTORY under systemd)
cid_profile = "kubo-cidv1"              # or "unixfs-v0-2015", "unixfs-v1-2025"
log_level = "info"                      # trace, debug, info, warn, error, fatal, silent

# One [[folders]] table per watched folder.
${folderTables}
[status]
listen = ${toml(DEFAULT_STATUS_LISTEN)}              # loopback "host:port", "unix:/path/status.sock", or "unix:" (the runtime dir)
metrics_token = false                   # true: /metrics needs the token in the state dir's status.token, like POSTs

[service]
${remote === undefined ? 'mode = "embedded"      ' : 'mode = "remote"        '}                 # "embedded": the local service, in-process; "remote": the URLs below
dir = ""                                # embedded: where the local service keeps its data (default: state_dir/service)
url = ${toml(remote ?? '')}${' '.repeat(Math.max(1, 34 - toml(remote ?? '').length))}# remote: a self-hosted \`cidsync local-service\`, every part at one URL; or each of:
deal_url = ""
api_url = ""
pointer_url = ""
upload_url = ""
gateways = []                           # tried in order

# One [[mirrors]] table per second home: every publish and stored object is copied there too, with
# the pointer (docs/mirrors.md). Credentials: \`cidsync login --mirror NAME\` (kept in the state dir).
# [[mirrors]]
# name = "nas"
# url = "http://127.0.0.1:8790"         # a self-hosted \`cidsync local-service\`: every part at one URL; or, as [service]:
# deal_url = ""                         #   deal_url (for deals and login), api_url, pointer_url, upload_url, gateways
# deal = true                           # ask the mirror's deal service for a deal of each object (with [snapshot] deal)
# max_lag_seconds = 21600               # \`cidsync status --check\` fails when the mirror lags longer
# allow_plain_http = false              # plain http to another machine is refused unless this says the network is trusted
# Or a plain directory (a USB disk, a NAS mount): \`cidsync login --mirror usb\` makes its store, once.
# [[mirrors]]
# name = "usb"
# path = "/media/usb/cidsync"           # a folder on the disk; copying waits while it is not mounted

[local_service]                         # only \`cidsync local-service\` (the self-hosted service) reads these
# signup = "open"                       # who may make an account: "open", "allowlist" (the wallets in allow), "invite"
                                        #   (a code from \`cidsync local-service invite\`) or "closed";
                                        #   unset: open on loopback, closed when it listens beyond this machine (--signup overrides)
allow = []                              # wallet addresses ("0x...") that may sign up with signup = "allowlist"
signup_rate_per_hour = 10               # new accounts open sign-up makes in an hour (each gets a quota); 0 = no limit
max_bytes_per_account = 0               # the bytes of uploads one account may hold, e.g. "50GiB"; 0 = no limit
max_bytes_total = 0                     # the bytes of all accounts' uploads together; 0 = no limit
max_ipns_keys_per_account = 100         # the IPNS keys one account may hold; 0 = no limit
max_connections = 128                   # connections held at once; past it the oldest idle one is closed
max_car_bytes = "64GiB"                 # the most one gateway CAR response sends (repeated links with dups=y amplify); past it the CAR is cut
hosts = []                              # on loopback it answers only requests naming a loopback address (Host 127.0.0.1:PORT); add the Host
                                        #   a reverse proxy in front of it sends ("cidsync.example.com")

[snapshot]
schedule = ${toml(DEFAULT_SNAPSHOT_SCHEDULE)}
encryption = "aes-256-gcm"              # or "none"
deal = true                             # send each snapshot for a storage deal
ipns_key = ""                           # ipnsName to publish the latest snapshot to; "auto" = make one; "" = none
min_interval_seconds = 300              # a burst of changes gives one snapshot: at most one this often,
quiet_seconds = 30                      # and once the folders have been quiet this long
max_drop_entries = 100                  # a publish that would drop more of this device's entries than both of
max_drop_fraction = 0.5                 # these is held until confirmed (cidsync snapshot --confirm-drop)
compact_after_deltas = 32               # a publish sends only what changed (a delta); after this many deltas,
compact_fraction = 0.5                  # or deltas past this fraction of the base's bytes, a new base instead

[content]                               # what \`store = true\` folders keep in the service (docs/content-format.md)
encryption = "aes-256-gcm"              # sealed before it leaves the device; "none": plain UnixFS, its CID the file's own
upload_rate = 0                         # bytes a second, e.g. "2MiB"; 0 = as fast as the link goes
max_file_size = "64GiB"                 # larger files are indexed but not stored (listed in status)
exclude = []                            # globs (as ignore) of files indexed but not stored
concurrency = 2                         # uploads at once (1 to 16)

[verify]
schedule = ${toml(DEFAULT_VERIFY_SCHEDULE)}            # the restore drill: fetch, verify and decrypt what a restore needs; "" = only on request

[reconcile]
schedule = ${toml(DEFAULT_RECONCILE_SCHEDULE)}

[watch]
hash_workers = 0                        # threads that hash files; 0 = one per core
settle_ms = ${DEFAULT_SETTLE_MS}                          # quiet time after a change before a file is hashed
rescan_interval_seconds = ${DEFAULT_RESCAN_INTERVAL_SECONDS}         # walk the folders afresh and repair the index this often; 0 = only on \`cidsync rescan\`

# Which publishes to keep (docs/retention.md). Without this table every publish is kept forever.
# The daemon forgets and prunes by it on \`schedule\`; \`cidsync forget --prune\` does it now.
# Each count keeps the newest publish of that many hours, days, ... that have one.
[retention]
keep_within = "48h"                     # every publish of the two days before the newest
keep_hourly = 24                        # a device that publishes seldom keeps its last 24 busy hours
keep_daily = 14
keep_weekly = 8                         # ISO weeks, Monday to Sunday
keep_monthly = 24
keep_yearly = 10
# keep_last = 0                         # the last N publishes, whenever they were made
prune_margin = ${toml(DEFAULT_PRUNE_MARGIN)}                     # an object younger than this is never deleted: another device may name it
schedule = ${toml(DEFAULT_RETENTION_SCHEDULE)}                 # when the daemon forgets and prunes: weekly, Sunday 05:17
# time_zone = "Europe/Berlin"           # the zone of those hours and days; unset: the system's
`
}
