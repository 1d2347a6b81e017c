import { existsSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import type { Config } from '../../config/index.js'
import { CidsyncError, ContentIntegrityError, SegmentUnusableError, UsageError } from '../../errors.js'
import { countOf, printJson } from '../format.js'
import { drillContentLine } from '../drill-content.js'
import { makeDirsSync } from '../../util/make-dirs.js'
import { lagLine } from '../mirror-lag.js'
import { STATE_NAMES } from '../../config/index.js'

/**
 * `cidsync verify --mirror NAME`: the restore drill against that mirror alone, its result
 * recorded for status beside the daemon's scheduled ones. Exit 4 naming the mirror and the first
 * object that fails; exit 3 when the mirror holds nothing yet.
 */
export async function runMirrorVerify (config: Config, name: string, options: { full?: boolean, content?: boolean, json?: boolean, namespace?: string, network?: string }): Promise<void> {
  if (options.namespace !== undefined || options.network !== undefined) throw new UsageError('--mirror drills the config\'s namespace and network: it does not take --namespace or --network')
  const { connectMirror, findMirror } = await import('../../connect/index.js')
  const mirror = connectMirror(config, findMirror(config, name))
  makeDirsSync(config.stateDir, 0o700)
  const { indexPath, openIndex, readDeviceId } = await import('../../index/index.js')
  const { createLogger } = await import('../../daemon/index.js')
  const { SyncStore, drillMirror, mirrorBehind, Repository } = await import('../../sync/index.js')
  const logger = createLogger({ level: 'error' })
  const fresh = !existsSync(indexPath(config.stateDir))
  const emptyIndex = join(config.stateDir, STATE_NAMES.snapshots, `verify-empty-${process.pid}.sqlite`)
  if (fresh) makeDirsSync(join(config.stateDir, STATE_NAMES.snapshots), 0o700)
  const index = fresh ? openIndex(emptyIndex) : openIndex(indexPath(config.stateDir), { readonly: true })
  const store = fresh ? undefined : new SyncStore(config.stateDir)
  // Its sync store is never opened: the drill keeps its own manifests, and a fresh device keeps nothing.
  const repository = new Repository(config, mirror.clients)
  try {
    const result = await drillMirror({ index, logger, deviceId: fresh ? '' : readDeviceId(config.stateDir) ?? '', repository, log: store?.mirrorLog }, name, { full: options.full, content: options.content })
    // A lagging mirror's drill proves its older publish restores, not the latest.
    const lag = store === undefined || result.cid === '' ? undefined : { cid: result.cid, at: null, ...mirrorBehind(store, result.cid) }
    if (options.json === true) printJson({ ...result, mirror: name, ...(lag === undefined ? {} : { lag: { mirrorCid: lag.cid, known: lag.known, behind: lag.behind } }) })
    else {
      const files = result.content == null || result.content.stored === 0 ? '' : drillContentLine(result.content, true)
      process.stdout.write(`mirror ${name}: ${result.restorable ? 'restorable' : 'NOT restorable'}: ${result.cid}; ${countOf(result.publishes, 'publish', 'publishes')}, ${countOf(result.segments, 'segment', 'segments')} fetched from it alone and checked${files}\n`)
      if (lag !== undefined && lag.known !== null && lag.behind !== 0) process.stdout.write(`${lagLine(`mirror ${name}`, lag)}\n`)
    }
    if (result.failed?.file !== undefined) {
      throw new ContentIntegrityError(`mirror ${name}: ${result.failed.message}: a restore from this mirror would not bring this file back. The mirror lacks the object or serves other bytes: let the daemon catch it up (\`cidsync status\` shows what it lacks), then verify again; a device with this mirror copies every file its index names, whichever device stored it, so a daemon of such a device must run (docs/mirrors.md)`)
    }
    if (result.failed !== null) {
      throw new SegmentUnusableError(`mirror ${name}: ${result.failed.message}: a restore from this mirror would fail. Let the daemon catch it up (\`cidsync status\` shows what it lacks) or publish again, then verify again`, result.failed.cid)
    }
  } catch (err) {
    // Whatever failed, the user reads which home it failed on.
    if (err instanceof CidsyncError && !err.message.startsWith(`mirror ${name}`)) err.message = `mirror ${name}: ${err.message}`
    throw err
  } finally {
    await repository.close()
    store?.close()
    index.close()
    await mirror.close()
    if (fresh) for (const suffix of ['', '-wal', '-shm']) rmSync(`${emptyIndex}${suffix}`, { force: true })
  }
}
