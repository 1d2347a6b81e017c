import type { Config } from '../config/index.js'
import type { MirrorConnection, ServiceConnection, TokenRenewal } from '../connect/index.js'
import type { Index } from '../index/index.js'
import type { MirrorLink, MirrorTiming, SyncEventListener, SyncRunner, SyncStore, SyncService, Repository } from '../sync/index.js'
import { z } from 'zod'
import { ConfigError } from '../errors.js'
import { releaseMemory } from '../util/release-memory.js'
import type { Logger } from './logger.js'
import type { StatusDocument } from './status-document.js'
import type { ChangeNotes } from './change-notes.js'
import { backoffMs } from '../util/backoff.js'

/** The longest wait between attempts to reach a service that could not be reached. */
const MAX_CONNECT_RETRY_MS = 300_000
/** How often the session token's renewal is looked at, at most: a token given by hand is seen within it. */
const RENEWAL_CHECK_MS = 3_600_000

/** A credential getter may throw (a file with loose permissions): status and checks treat that as absent. */
export function safely (read: (() => string | undefined) | undefined): string | undefined {
  try {
    return read?.()
  } catch {
    return undefined
  }
}

const whole = z.coerce.number().int().min(10).max(86_400_000)

/**
 * Knobs for tests and operators, read once: `CIDSYNC_MIRROR_RETRY_MAX_MS` (the longest wait after
 * failed copies to a mirror) and `CIDSYNC_MIRROR_POINTER_CHECK_MS` (how often an idle mirror's
 * pointer is looked at).
 */
export function mirrorTiming (env: NodeJS.ProcessEnv): Partial<MirrorTiming> {
  const read = (name: string): number | undefined => {
    const raw = (env[name] ?? '').trim()
    if (raw === '') return undefined
    const parsed = whole.safeParse(raw)
    if (!parsed.success) throw new ConfigError(`${name} = ${JSON.stringify(raw)}: expected whole milliseconds from 10 to 86400000`)
    return parsed.data
  }
  const maxRetryMs = read('CIDSYNC_MIRROR_RETRY_MAX_MS')
  const pointerCheckMs = read('CIDSYNC_MIRROR_POINTER_CHECK_MS')
  return {
    ...(maxRetryMs === undefined ? {} : { maxRetryMs, firstRetryMs: Math.min(2_000, maxRetryMs) }),
    ...(pointerCheckMs === undefined ? {} : { pointerCheckMs })
  }
}

/**
 * Whether the daemon stores content (a folder with `store`): only then does an embedded service
 * get a thread of its own (its imports of every block would stall the daemon's reading and
 * sealing). Without content the daemon sends it the index's segments alone, a few requests a
 * publish. A thread (its isolate and a second copy of the service's modules) would cost memory at
 * rest and at the restart's peak (docs/benchmarks.md, "Memory beside syncthing"). Decided when the
 * service is reached: a reload that makes a folder store keeps the service on this thread until
 * the daemon restarts (slower, still right).
 */
export function storesContent (config: Config): boolean {
  return config.folders.some(folder => folder.store === true)
}

export interface ServiceLinkComponents {
  readonly logger: Logger
  readonly index: Index
  readonly deviceId: string
  /** The config now (a reload replaces it). */
  readonly config: () => Config
  /** Aborted when the daemon stops. */
  readonly stopped: AbortSignal
  /** A file the start-up check of the sync state recovered. */
  readonly noteRecovery: (file: string, problem: string, action: string) => void
  /** Told as publishes and reconciliations start, step and end. */
  readonly onSyncEvent?: SyncEventListener
  /** The index's change notes: the runner is attached to them once it exists (the one owner of that hand-over). */
  readonly changes: ChangeNotes
}

/**
 * The daemon's side that talks to the service. Once the index is current, the sync state is
 * checked: sync.sqlite is opened once, for everything that syncs. Then the service is reached (the
 * embedded one started and signed in to), and the sync runner started. A service that cannot be
 * reached is an error in status, tried again with a growing wait (up to
 * {@link MAX_CONNECT_RETRY_MS}) until it can; indexing goes on meanwhile.
 */
export class ServiceLink {
  connection: ServiceConnection | undefined
  runner: SyncRunner | undefined
  /** Why the service could not be reached, and when it is tried again. */
  error: string | undefined
  leftoversRemoved = { files: 0, bytes: 0 }
  syncStateError: string | null = null
  private store: SyncStore | undefined
  /** The process's repository once the service is reached: the passphrase is read there, once. */
  private repository: Repository<SyncService> | undefined
  /** Cuts the wait before the next attempt to reach the service short (a user asked for it). */
  private wakeConnect: (() => void) | undefined
  /** Reaching the service, once begun: stopping waits for it, so nothing it starts outlives the daemon. */
  private connecting: Promise<void> | undefined
  /** The mirrors' clients for the config the runner runs on. */
  private mirrorConnections: MirrorConnection[] = []
  /** The session token's renewal loop, once the service is reached: stopping waits for it. */
  private renewing: Promise<void> | undefined

  constructor (private readonly components: ServiceLinkComponents) {}

  /** Starts once `current` resolves (the index is current); never rejects. */
  connectWhen (current: Promise<void>, indexLost: string | undefined): void {
    const { logger, stopped } = this.components
    void current.then(async () => {
      this.connecting = (async () => {
        if (!stopped.aborted) await this.prepareSyncState(indexLost)
        for (let attempt = 0; !stopped.aborted; attempt++) {
          try {
            await this.connectOnce()
            return
          } catch (err) {
            const waitMs = backoffMs({ firstMs: 1000, maxMs: MAX_CONNECT_RETRY_MS, jitter: 'spread' }, attempt + 1)
            this.error = `${(err as Error).message} (trying again at ${new Date(Date.now() + waitMs).toISOString()})`
            logger.error({ err, retryInMs: waitMs }, 'the service could not be reached')
            await this.pause(waitMs)
          }
        }
      })()
      await this.connecting
    }).catch((err: unknown) => { logger.error({ err }, 'reaching the service stopped') })
  }

  /** Someone asked for the service: the next attempt is made now. */
  wake (): void {
    this.wakeConnect?.()
  }

  /** The runner's status reads sync.sqlite: an error there shows in status instead of failing it. */
  publishStatus (): StatusDocument['publish'] {
    try {
      const status = this.runner?.status() ?? null
      this.syncStateError = null
      return status
    } catch (err) {
      this.syncStateError = `${(err as Error).message}: restart the daemon; it moves a damaged sync.sqlite aside`
      return null
    }
  }

  /** The runner stopped (a publish in flight ends at its next step), then sync.sqlite closed. */
  async stopSync (): Promise<void> {
    // A start of the embedded service in flight finishes (and, the daemon stopping, closes it)
    // before the state dir is let go: it would write service files after the daemon stopped.
    await this.connecting?.catch(() => {})
    await this.renewing
    this.components.changes.detach()
    await this.runner?.stop()
    this.store?.close()
  }

  async close (): Promise<void> {
    await Promise.all(this.mirrorConnections.map(async c => { await c.close() }))
    await this.connection?.close()
  }

  /** The mirrors of `config` reached afresh; the previous ones (their loops already stopped) closed. */
  private mirrorLinks (config: Config, connect: (config: Config) => MirrorConnection[]): MirrorLink[] {
    const old = this.mirrorConnections
    void Promise.all(old.map(async c => { await c.close() })).catch(() => {})
    this.mirrorConnections = connect(config)
    return this.mirrorConnections.map(c => ({ name: c.name, clients: c.clients, deal: c.mirror.deal && c.mirror.dealUrl !== '', maxLagSeconds: c.mirror.maxLagSeconds, describe: c.describe }))
  }

  /** Waits, or less if the daemon stops or someone asks for the service meanwhile. */
  private async pause (ms: number): Promise<void> {
    await new Promise<void>(resolve => {
      const done = (): void => { clearTimeout(timer); this.wakeConnect = undefined; resolve() }
      const timer = setTimeout(done, ms)
      this.wakeConnect = done
      this.components.stopped.addEventListener('abort', done, { once: true })
    })
  }

  /** sync.sqlite checked (moved aside if unreadable), a lost index noted against it, killed jobs' temp files removed. */
  private async prepareSyncState (indexLost: string | undefined): Promise<void> {
    const { logger, noteRecovery } = this.components
    try {
      const { prepareSyncState } = await import('../sync/index.js')
      const prepared = await prepareSyncState(this.components.config().stateDir, { indexLost })
      this.store = prepared.store
      for (const r of prepared.recovered) noteRecovery(r.file, r.problem, r.action)
      this.leftoversRemoved = { files: prepared.leftovers.files, bytes: prepared.leftovers.bytes }
      if (prepared.leftovers.files > 0) logger.info(this.leftoversRemoved, 'removed temp files left by killed publishes and restores')
    } catch (err) {
      logger.error({ err }, 'the start-up check of the sync state failed')
    }
  }

  /**
   * Renews the session token when due, at start and then at most an hour apart (sooner when a
   * renewal or a retry is due). Each outcome is logged; status reads the renewal's state.
   */
  private renewLoop (renewal: TokenRenewal): void {
    const { logger, stopped } = this.components
    let said: string | undefined
    this.renewing = (async () => {
      while (!stopped.aborted) {
        const outcome = await renewal.tick(stopped)
        const state = renewal.state()
        if (outcome === 'renewed') logger.info({ renewedAt: state.renewedAt, renewAt: state.renewAt }, 'session token renewed with the wallet key')
        if (outcome === 'failed') logger.warn({ err: state.lastError, failures: state.failures, nextAttemptAt: state.nextAttemptAt }, 'renewing the session token failed')
        // Said once, not every hour.
        if (outcome === 'unavailable' && state.why !== said) logger.warn({ why: state.why }, 'the session token cannot be renewed here')
        said = state.why ?? undefined
        // Nothing can renew it (no wallet key): looked at again within the hour, not at once.
        const next = outcome === 'unavailable' ? undefined : renewal.nextCheckAt()
        await this.sleep(Math.min(RENEWAL_CHECK_MS, Math.max(60_000, (next ?? Infinity) - Date.now())))
      }
    })().catch((err: unknown) => { logger.error({ err }, 'renewing the session token stopped') })
  }

  /** Waits `ms`, or less if the daemon stops. */
  private async sleep (ms: number): Promise<void> {
    const { stopped } = this.components
    if (stopped.aborted) return
    await new Promise<void>(resolve => {
      const done = (): void => { clearTimeout(timer); stopped.removeEventListener('abort', done); resolve() }
      const timer = setTimeout(done, ms)
      stopped.addEventListener('abort', done, { once: true })
    })
  }

  /** The daemon's repository, once the service is reached (what a walk of the history needs). */
  historyAccess (): Repository | undefined {
    return this.repository
  }

  private async connectOnce (): Promise<void> {
    const { logger, index, deviceId, stopped } = this.components
    const config = this.components.config()
    // Loaded here, not at start-up: the clients and the local service are not needed to index.
    const { connectService, connectMirrors } = await import('../connect/index.js')
    const timing = mirrorTiming(process.env)
    const connection = await connectService(config, process.env, { storing: storesContent(config) })
    if (stopped.aborted) {
      await connection.close()
      return
    }
    this.connection = connection
    this.error = undefined
    if (connection.renewal !== undefined) this.renewLoop(connection.renewal)
    const { Repository, SyncRunner, SyncStore } = await import('../sync/index.js')
    // The start-up check opens it; if that failed, it is opened here (and an error here is tried again).
    const store = this.store ??= new SyncStore(config.stateDir)
    // The process's repository: the passphrase read once, here.
    this.repository = new Repository(() => this.components.config(), connection.clients, { store })
    this.runner = new SyncRunner({
      repository: this.repository,
      index,
      logger,
      deviceId,
      credentials: () => ({ apiKey: safely(this.connection?.credentials.apiKey), sessionToken: safely(this.connection?.credentials.sessionToken) }),
      onEvent: this.components.onSyncEvent,
      mirrors: (c) => this.mirrorLinks(c, connectMirrors),
      mirrorTiming: timing,
      reclaim: connection.reclaim,
      reclaimDue: connection.reclaimDue
    })
    this.runner.start()
    // Changes held while the service was being reached, and those made while the daemon was down
    // (the index moved since the last publish), are noted to the runner; nothing else is.
    const last = store.lastPublished()
    this.components.changes.attach(this.runner, last === undefined || last.marker !== index.changeMarker())
    void this.runner.reconcileNow().catch(() => {})
    releaseMemory()
    logger.info({ service: connection.describe }, 'service ready')
  }
}
