import { spawn } from 'node:child_process'

/** The id of a process that ran and is gone: what a run killed midway leaves its files named by. */
export async function deadPid (): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' })
  await new Promise(resolve => child.on('close', resolve))
  return child.pid as number
}
