// A device for the retention bench, run in this process: its folder caught up, its content stored
// and a publish made, as `cidsync snapshot` does, at a time the bench chooses.
import { hostname } from 'node:os'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { cidProfile, fileCid } from '../../dist/content/index.js'
import { join } from 'node:path'
import pino from 'pino'
import { loadConfig } from '../../dist/config/index.js'
import { connectService } from '../../dist/connect/index.js'
import { indexPath, loadOrCreateDeviceId, openIndex } from '../../dist/index/index.js'
import { compactOwnIndex, prepareSyncState, publish, forget, prune, storeContent, Repository } from '../../dist/sync/index.js'
import { createWatcher } from '../../dist/watch/index.js'

/** The policy `cidsync init` writes, in UTC (docs/retention.md). */
export const INIT_POLICY = 'keep_within = "48h"\nkeep_hourly = 24\nkeep_daily = 14\nkeep_weekly = 8\nkeep_monthly = 24\nkeep_yearly = 10\nprune_margin = "1d"\ntime_zone = "UTC"\n'

/**
 * Writes `dir`/c.toml: state and service beside it (relative paths, so a copy of `dir` is a
 * device of its own), one storing folder `tree`, `[retention]` as given. Answers the config's path.
 */
export function writeDevice (dir, tree, retention) {
  mkdirSync(dir, { recursive: true })
  const path = join(dir, 'c.toml')
  writeFileSync(path, `state_dir = "state"\nnamespace = "bench-retention"\n[[folders]]\nname = "tree"\npath = "${tree}"\nstore = true\n` +
    `[service]\nmode = "embedded"\ndir = "service"\n[snapshot]\ndeal = false\n[status]\nlisten = "127.0.0.1:0"\n[retention]\n${retention}`)
  return path
}

/** Hashes each changed path and writes its row (a missing file is a deletion), its meta as the row had it. */
async function applyChanges (index, deviceId, folder, profileName, changed) {
  const profile = cidProfile(profileName)
  const metaOf = index.db.prepare(`SELECT kind, mode, uid, gid, owner, grp, target, link_group FROM entries WHERE device_id = ? AND folder = ? AND path = ?`)
  const changes = []
  for (const path of changed) {
    const file = join(folder.path, path)
    if (!existsSync(file)) { changes.push({ kind: 'delete', folder: folder.name, path }); continue }
    const hashed = await fileCid(file, profile)
    const row = metaOf.get(deviceId, folder.name, path)
    const [mode, uid, gid] = hashed.stat
    const meta = { kind: 'file', mode: mode & 0o7777, uid, gid, owner: row?.owner ?? null, group: row?.grp ?? null, target: null, linkGroup: null }
    changes.push({ kind: 'upsert', folder: folder.name, path, size: hashed.size, mtimeMs: hashed.mtimeMs, cid: hashed.cid.toString(), cidProfile: profile.name, meta })
  }
  index.entries.apply(deviceId, changes)
}

/** Opens the device at `configPath` in this process: its index, sync state and embedded service. */
export async function openDevice (configPath) {
  const config = loadConfig({ configPath, env: {} })
  const logger = pino({ level: 'warn' })
  mkdirSync(config.stateDir, { recursive: true, mode: 0o700 })
  const index = openIndex(indexPath(config.stateDir))
  const { store } = await prepareSyncState(config.stateDir, { indexLost: false })
  const deviceId = loadOrCreateDeviceId(config.stateDir, () => {})
  const connection = await connectService(config, {}, { storing: true })
  const repository = new Repository(config, connection.clients, { store })
  // The first publish scans the folder; later ones are handed the paths that changed.
  const watcher = createWatcher({ index, logger, deviceId }, { folders: config.folders, profile: config.cidProfile, hashWorkers: 1, settleMs: 0 })
  return {
    config,
    repository,
    /**
     * Brings the index up to date, stores the new content, publishes stamped `at` (a Date). Without
     * `changed` the folder is scanned; with it, only those paths (relative to the folder) are
     * hashed and written, as the watcher writes them: a rescan of the whole tree at every
     * publish would take most of the bench's time, and it is not what is measured.
     */
    async publishAt (at, changed) {
      if (changed === undefined) await watcher.catchUp()
      else await applyChanges(index, deviceId, config.folders[0], config.cidProfile, changed)
      const stored = await storeContent({ index, repository, logger, deviceId, hostname: hostname() }, {})
      if (stored.failed.length + stored.tooLarge.length > 0) throw new Error(`content not stored: ${JSON.stringify(stored.failed.slice(0, 3))}`)
      return await publish({ index, repository, logger, deviceId, clock: { now: () => at.getTime() } }, {})
    },
    /** The daemon's retention run at `now`: forget, prune, then the space reclaimed. */
    async retain (now) {
      const retention = config.retention
      const started = performance.now()
      const forgot = await forget(repository, { policy: retention.policy, now, timeZone: retention.timeZone })
      const forgotAt = performance.now()
      const init = { marginMs: retention.pruneMarginSeconds * 1000, now, repack: { index, deviceId, hostname: hostname(), compactIndex: async (signal) => await compactOwnIndex(repository, { index, deviceId, signal }) } }
      let pruned = await prune(repository, init)
      // As the daemon does: packs rewritten are published at once, and a second prune deletes the old ones.
      if ((pruned.repacked?.made ?? 0) > 0) {
        await this.publishAt(now, [])
        const second = await prune(repository, init)
        pruned = { ...second, segmentsRead: pruned.segmentsRead + second.segmentsRead, deleted: Object.fromEntries(Object.entries(pruned.deleted).map(([k, v]) => [k, v + second.deleted[k]])) }
      }
      const prunedAt = performance.now()
      const deleted = pruned.deleted.root + pruned.deleted.content + pruned.deleted.segment + pruned.deleted.manifest
      if (deleted > 0) await connection.reclaim?.()
      const ms = { forget: forgotAt - started, prune: prunedAt - forgotAt, reclaim: performance.now() - prunedAt }
      return { forgot, pruned, deleted, ms }
    },
    /** What the service lists for this account, in bytes: content objects (sealed packs), and the rest (segments, manifests, roots). */
    async held () {
      const held = { objects: 0, content: 0, index: 0 }
      for await (const o of repository.objects.list({})) {
        held.objects++
        if (o.name.endsWith('.sealed')) held.content += o.size
        else held.index += o.size
      }
      return held
    },
    async close () {
      await watcher.stop()
      await connection.close()
      store.close()
      index.close()
    }
  }
}
