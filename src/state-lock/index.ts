/**
 * One writer per state dir: the lock a daemon holds while it runs, and a command that replaces
 * or publishes the index (`restore`, `snapshot`, `reconcile`) takes instead; and `daemon.json`,
 * which says who holds it and where its status endpoint listens. A room of its own, so that a
 * command taking the lock does not load the daemon: its watcher, finder and chokidar.
 */
export { acquireLock, readDaemonInfo, DAEMON_INFO_FILE, LOCK_FILE } from './lock.js'
export type { DaemonInfo, DaemonLock } from './lock.js'
