import { spawn } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { mkdir, readdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { CLI, runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { bound } from '../helpers/wait.js'

/** Runs the CLI with its stdout's reader gone before it writes (`cidsync … | head` once head has quit). */
async function runIntoClosedPipe (args: string[], limitMs = 20_000): Promise<{ code: number | null, stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  child.stdout.destroy()
  const timer = setTimeout(() => child.kill('SIGKILL'), bound(limitMs))
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

  it('lets a restore whose reader went away finish every file instead of ending it with 0 half done', async () => {
    const dir = await useTempDir()
    const notes = join(dir, 'notes')
    await mkdir(notes)
    const config = join(dir, 'config.toml')
    await writeFile(config, `state_dir = "state"\nnamespace = "content"\n[[folders]]\nname = "notes"\npath = "${notes}"\nstore = true\n` +
      `[service]\ndir = "${join(dir, 'service')}"\n[snapshot]\ndeal = false\n[status]\nlisten = "127.0.0.1:0"\n`)
    for (let i = 0; i < 30; i++) await writeFile(join(notes, `f-${i}.bin`), randomBytes(2000 + i))
    const snapshot = await runCli(['snapshot', '--config', config], { timeoutMs: 120_000 })
    expect(snapshot.code, snapshot.stderr).toBe(0)
    const to = join(dir, 'back')
    // --json: a line a file on stdout, the first of them lost to the closed pipe.
    const run = await runIntoClosedPipe(['restore', '--files', '--json', '--to', to, '--config', config], 120_000)
    expect(run.stderr).not.toMatch(/EPIPE|Unhandled/)
    const back = (await readdir(join(to, 'notes')).catch(() => [] as string[])).filter(n => !n.startsWith('.'))
    expect({ code: run.code, files: back.length }).toEqual({ code: 0, files: 30 })
  })
})
