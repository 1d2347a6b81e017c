import { spawn } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { CLI } from '../helpers/cli.js'
import { bound } from '../helpers/wait.js'

/** Runs the CLI with its stdout's reader gone before it writes (`cidsync … | head` once head has quit). */
async function runIntoClosedPipe (args: string[]): Promise<{ code: number | null, stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  child.stdout.destroy()
  const timer = setTimeout(() => child.kill('SIGKILL'), bound(20_000))
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
  const code = await new Promise<number | null>(resolve => child.on('close', c => resolve(c)))
  clearTimeout(timer)
  return { code, stderr }
}

describe('a reader that stops early (cidsync … | head)', () => {
  it('ends the command quietly with 0, no stack trace', async () => {
    for (const args of [['--help'], ['--version'], ['restore', '--help']]) {
      const run = await runIntoClosedPipe(args)
      expect(run.stderr, args.join(' ')).not.toMatch(/EPIPE|Unhandled|at /)
      expect(run.code, args.join(' ')).toBe(0)
    }
  })
})
