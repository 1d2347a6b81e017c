import { lstatSync, rmSync, type Stats } from 'node:fs'
import { connect } from 'node:net'
import { ListenError } from '../errors.js'

function kindOf (stats: Stats): string {
  if (stats.isFile()) return 'a regular file'
  if (stats.isDirectory()) return 'a directory'
  if (stats.isSymbolicLink()) return 'a symbolic link'
  if (stats.isFIFO()) return 'a FIFO'
  return 'not a socket'
}

/** Whether a program answers on the socket at `path` (bounded: 1 s). */
async function answers (path: string): Promise<boolean> {
  return await new Promise(resolve => {
    const socket = connect(path)
    const done = (live: boolean): void => { clearTimeout(timer); socket.destroy(); resolve(live) }
    const timer = setTimeout(() => done(true), 1_000)
    socket.once('connect', () => done(true))
    socket.once('error', () => done(false))
  })
}

/**
 * Makes room for the status socket at `path`. Only a stale socket (one nobody listens on: a daemon
 * killed with -9) is removed; a file, directory or link there, or a socket another program
 * listens on, is never deleted and the start is refused.
 */
export async function clearStaleSocket (path: string): Promise<void> {
  const stats = lstatSync(path, { throwIfNoEntry: false })
  if (stats === undefined) return
  if (!stats.isSocket()) {
    throw new ListenError(`the status endpoint cannot listen on unix:${path}: ${kindOf(stats)} is there, and it is not replaced; ` +
      'move it away or set [status] listen to another path')
  }
  if (await answers(path)) {
    throw new ListenError(`the status endpoint cannot listen on unix:${path}: another program listens on it; stop it or set [status] listen to another path`)
  }
  rmSync(path, { force: true })
}
