/**
 * Whether a process of that id runs (one of another user's counts: EPERM). Commands that take no
 * lock (`get`, `export`) leave files named by their pid; a later run removes them only once that
 * process is gone.
 */
export function processAlive (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}
