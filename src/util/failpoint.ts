/**
 * Crash-testing hook: when `CIDSYNC_FAILPOINT` names this point, the process kills itself with
 * SIGKILL right here, as a power cut or `kill -9` would. Tests use it to prove a job resumes from
 * any step; it does nothing otherwise.
 */
export function failpoint (name: string): void {
  if (process.env.CIDSYNC_FAILPOINT === name) process.kill(process.pid, 'SIGKILL')
}
