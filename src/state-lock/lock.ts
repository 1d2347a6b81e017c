import { readFileSync, rmSync } from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { tryExclusiveLock } from '../util/exclusive-lock.js'
import { LockHeldError } from '../errors.js'
import { writeFileAtomicSync } from '../util/atomic-write.js'
import { STATE_NAMES } from '../config/index.js'

export const LOCK_FILE = STATE_NAMES.daemonLock
/** Who holds the lock and where its status endpoint listens; removed on a clean stop. */
export const DAEMON_INFO_FILE = STATE_NAMES.daemonInfo

export interface DaemonInfo {
  readonly pid: number
  readonly hostname: string
  readonly startedAt: string
  /** The status endpoint as `cidsync status` should reach it (`host:port` or `unix:/path`). */
  readonly status?: string
}

export interface DaemonLock {
  /** Records the status address once it is known. */
  update (info: Partial<DaemonInfo>): void
  release (): void
}

export function readDaemonInfo (stateDir: string): DaemonInfo | undefined {
  try {
    return JSON.parse(readFileSync(join(stateDir, DAEMON_INFO_FILE), 'utf8')) as DaemonInfo
  } catch {
    return undefined
  }
}

/**
 * One daemon per state dir. The lock is an exclusive SQLite lock (an fcntl lock underneath), so
 * the kernel drops it when the holder dies, even by kill -9: no stale lock file to clean up.
 */
export function acquireLock (stateDir: string): DaemonLock {
  const lockPath = join(stateDir, LOCK_FILE)
  const lock = tryExclusiveLock(lockPath)
  if (lock === undefined) {
    const holder = readDaemonInfo(stateDir)
    throw new LockHeldError(lockPath, holder === undefined
      ? 'a process that has not yet said who it is'
      : `pid ${holder.pid} on ${holder.hostname}, started ${holder.startedAt}`)
  }
  let info: DaemonInfo = { pid: process.pid, hostname: hostname(), startedAt: new Date().toISOString() }
  const infoPath = join(stateDir, DAEMON_INFO_FILE)
  // Private like the rest of the state dir: it says where the status endpoint listens.
  writeFileAtomicSync(infoPath, JSON.stringify(info) + '\n', { mode: 0o600 })
  return {
    update (more) {
      info = { ...info, ...more }
      writeFileAtomicSync(infoPath, JSON.stringify(info) + '\n', { mode: 0o600 })
    },
    release () {
      if (!lock.held()) return
      rmSync(infoPath, { force: true })
      lock.release()
    }
  }
}
