/** Keys and values of `sync_state`: what the sync store reads and writes there. */

/** Keys of `sync_state`, as on disk since the first version (an existing sync.sqlite reads the same). */
export const KEY = {
  /** The pointer CID this device last published or restored. */
  base: 'base_cid',
  lastMarker: 'last_published_marker',
  lastCid: 'last_published_cid',
  lastAt: 'last_published_at',
  lastEntries: 'last_published_entries',
  /** This device's own live entries in its last published snapshot: a publish that drops many is held. */
  lastOwnEntries: 'last_published_own_entries',
  /** What the pointer held when last looked at ('' for nothing stored), and when. */
  remotePointer: 'remote_pointer_cid',
  remotePointerAt: 'remote_pointer_at',
  /** Restores into this state dir: JSON list of `{at, seconds}`, the last 100. */
  restores: 'restores',
  /** The IPNS key made for `ipns_key = "auto"`. */
  ipnsKey: 'ipns_key_name',
  ipnsId: 'ipns_key_id',
  /** The IPNS name last published to (JSON `IpnsPublished`), whichever key the config named. */
  ipnsPublished: 'ipns_published',
  /** The last restore drill's result (JSON `VerifyResult`). */
  lastVerify: 'last_verify',
  /** When a drill last found everything restorable. */
  lastVerifySuccess: 'last_verify_success_at',
  /** '1' once this device published or merged a manifest bound to its namespace: unbound ones are then suspect. */
  boundSeen: 'namespace_bound_seen',
  /** JSON `{deviceId, seq}`: the furthest sequence of its own rows this device put behind the pointer. */
  ownSeq: 'own_published_seq',
  /** JSON {@link Refusal}: what the last merge refused of the pointer's publish ('' when nothing). */
  refused: 'refused_from_pointer',
  /** JSON {@link Refusal}: the last time the pointer was found without this device's last publish. */
  rollback: 'pointer_rollback',
  /** JSON list of the daemon's content failures (`ContentFailure`), as its last pass left them. */
  contentFailures: 'content_failures',
  /** JSON `{deviceId, seq}`: the last of this device's content records an index object it uploaded holds. */
  contentIndexSent: 'content_index_sent',
  /** JSON `{cid, storedAt}`: the newest object of the store's listing at the last walk for index objects. */
  contentIndexHead: 'content_index_head',
  /** JSON `{deviceId, seq, objects}`: the index objects of this device's last full compaction, and the records they hold up to. */
  contentIndexBase: 'content_index_base',
  /** JSON `{deviceId: seq}`: how far each device's content records in the index were logged for the mirrors. */
  mirrorContentSeen: 'mirror_content_seen',
  /** JSON list: the last publishes whose whole history was logged for the mirrors. */
  mirrorHistoryWalked: 'mirror_history_walked',
  /** Prefix, then `/NAME`: JSON `SkippedObjects`, what a mirror lacks because the primary would not give it. */
  mirrorSkipped: 'mirror_skipped',
  /** JSON `ForgetRecord`: the last forget that ran, from the CLI or the daemon. */
  lastForget: 'retention_last_forget',
  /** JSON `PruneRecord`: the last prune that ran and what it deleted (a dry run never writes it). */
  lastPrune: 'retention_last_prune',
  /** JSON `PrunePlanRecord`: what the last prune or dry run counted: held, would free, within the margin. */
  prunePlan: 'retention_prune_plan',
  /** JSON list: objects a prune asked the primary to delete and has not logged for the mirrors yet. */
  pruneDeleting: 'prune_deleting',
  /** The CID of the last prune list read ('' when the service held none): its objects are in `prune_list`. */
  pruneList: 'prune_list_cid',
  /** JSON `{deviceId, seq}`: how far this device's content records were checked against the prune lists. */
  pruneListChecked: 'prune_list_checked'
} as const
export type Key = typeof KEY[keyof typeof KEY]

/** Restores remembered for status. */
export const KEEP_RESTORES = 100

/** What this device last published. */
export interface LastPublished {
  readonly cid: string
  /** The change marker it was published at ('' once the index it came from was lost). */
  readonly marker: string | null
  readonly at: string | null
  readonly entries: number
  /** This device's own live entries in it, for the drop guard. */
  readonly ownEntries: number | null
}

/**
 * Something the pointer held that this device would not take, for status: when, its code, what
 * to do. A rollback names the pointer found set back: status says so while the pointer holds it.
 */
export interface Refusal { readonly at: string, readonly code: string, readonly message: string, readonly pointer?: string }

/** An IPNS name this device published a snapshot to: the key's name, its id (`/ipns/ID`), what and when. */
export interface IpnsPublished { readonly name: string, readonly id: string, readonly cid: string, readonly at: string }

export interface RestoreRecord { readonly at: string, readonly seconds: number }
