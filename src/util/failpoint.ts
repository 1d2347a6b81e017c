/**
 * Crash-testing hook: when `CIDSYNC_FAILPOINT` names this point, the process kills itself with
 * SIGKILL right here, as a power cut or `kill -9` would. Tests use it to prove a job resumes from
 * any step; it does nothing otherwise. `CIDSYNC_FAILPOINT=<point>=<CODE>` throws an error with that
 * code there instead (`SQLITE_FULL`, `ENOSPC`...), as a full disk would, to prove what a user sees.
 * `<point>=SIGINT` (or another signal's name) sends that signal to the process there, once, as
 * Ctrl-C would.
 */
export function failpoint (name: string): void {
  const wanted = process.env.CIDSYNC_FAILPOINT
  if (wanted === undefined || !wanted.startsWith(name)) return
  if (wanted === name) process.kill(process.pid, 'SIGKILL')
  if (wanted.charAt(name.length) === '=') {
    const code = wanted.slice(name.length + 1)
    if (code.startsWith('SIG')) { signalOnce(name, code); return }
    throw Object.assign(new Error(`${code} (failpoint ${name})`), { code })
  }
}

/** Signal failpoints that fired: a point passed again sends nothing more (a second Ctrl-C means more). */
const signalled = new Set<string>()

function signalOnce (name: string, signal: string): void {
  if (signalled.has(name)) return
  signalled.add(name)
  process.kill(process.pid, signal)
}
