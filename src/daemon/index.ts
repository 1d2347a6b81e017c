/**
 * The daemon: lifecycle, single-instance lock, logging, the status endpoint and its metrics.
 */
import type { Config } from '../config/index.js'
import { Daemon } from './daemon.js'
import { createLogger, type Logger } from './logger.js'
import { errorTopic } from './recent-errors.js'

export { Daemon } from './daemon.js'
export { DEFAULT_RECENT_ERRORS, DEFAULT_RESOLVED_ERRORS, RecentErrors, errorTopic } from './recent-errors.js'
export type { DaemonComponents, DaemonInit } from './daemon.js'
export { createLogger, REDACTED_PATHS } from './logger.js'
export type { Logger, LoggerInit } from './logger.js'
export { acquireLock, readDaemonInfo, DAEMON_INFO_FILE, LOCK_FILE } from '../state-lock/index.js'
export type { DaemonInfo, DaemonLock } from '../state-lock/index.js'
export { StatusServer, allowedHosts } from './status-server.js'
export { otherDaemonAt } from './listen-owner.js'
export type { StatusDocument, FolderStatus, Glance, GlanceLevel, RecentError, ResolvedError, ReloadStatus } from './status-document.js'
export { renderMetrics } from './metrics.js'
export { ensureStatusToken, readStatusToken, STATUS_TOKEN_FILE } from './status-token.js'
export { CHALLENGE_PATH, ChallengeIssuer, isDaemonProof, newNonce, proofHeader, PROOF_SCHEME } from './status-proof.js'
export { EventBus, EVENT_TYPES, DEFAULT_EVENT_RING } from './event-bus.js'
export type { DaemonEvent, EventType } from './event-bus.js'
export { EventStreams, DEFAULT_MAX_STREAMS, DEFAULT_MAX_BUFFERED_BYTES } from './event-stream.js'
export { DashboardAuth, CSRF_HEADER, LOGIN_CODE_TTL_MS, sessionCookieName } from './dashboard-auth.js'

/** Builds a daemon whose errors also land in its status document. */
export function createDaemon (config: Config, logger?: Logger): Daemon {
  let daemon: Daemon | undefined
  const log = logger ?? createLogger({
    level: config.logLevel,
    onError: (message, fields) => {
      const err = fields.err as { code?: string, message?: string } | undefined
      daemon?.recordError(message, err?.code, err?.message, errorTopic(message, fields, err?.code))
    }
  })
  daemon = new Daemon({ logger: log }, { config })
  return daemon
}
