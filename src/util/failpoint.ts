/**
 * Crash-testing hook: when `CIDSYNC_FAILPOINT` names this point, the process kills itself with
 * SIGKILL right here, as a power cut or `kill -9` would. Tests use it to prove a job resumes from
 * any step; it does nothing otherwise. `CIDSYNC_FAILPOINT=<point>=<CODE>` throws an error with that
 * code there instead (`SQLITE_FULL`, `ENOSPC`...), as a full disk would, to prove what a user sees.
 */
export function failpoint (name: string): void {
  const wanted = process.env.CIDSYNC_FAILPOINT
  if (wanted === undefined || !wanted.startsWith(name)) return
  if (wanted === name) process.kill(process.pid, 'SIGKILL')
  if (wanted.charAt(name.length) === '=') {
    const code = wanted.slice(name.length + 1)
    throw Object.assign(new Error(`${code} (failpoint ${name})`), { code })
  }
}
