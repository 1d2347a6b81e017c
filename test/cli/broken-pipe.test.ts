import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { CLI } from '../helpers/cli.js'
import { bound } from '../helpers/wait.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { localServiceUnderTest } from '../helpers/service.js'
import { contentDevice, ok, tree, writeSomeFiles } from './content-devices.js'

/** Runs the CLI with its stdout's reader gone before it writes (`cidsync … | head` once head has quit). */
async function runIntoClosedPipe (args: string[], env?: NodeJS.ProcessEnv): Promise<{ code: number | null, stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  child.stdout.destroy()
  const timer = setTimeout(() => child.kill('SIGKILL'), bound(60_000))
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

  it('does not cut short a command that does work: restore --files --json | head -1 brings every file back, exit 0', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await contentDevice(root, service, 'a')
    await writeSomeFiles(a.folder, 'd', { largeBytes: 64 * 1024, small: 30 })
    await ok(a, ['snapshot'])
    const back = join(root, 'back')
    // Ended with 0 at its first line before: none of the 31 files written, a temp left.
    const run = await runIntoClosedPipe(['restore', '--files', '--to', back, '--json', '--config', a.config], a.env)
    expect(run.stderr).not.toMatch(/EPIPE|Unhandled|at /)
    expect(run.code, run.stderr).toBe(0)
    expect(await tree(join(back, 'notes'))).toEqual(await tree(a.folder))
  }, 120_000)
})
