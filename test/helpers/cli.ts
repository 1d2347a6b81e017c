import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { afterEach } from 'vitest'
import { bound } from './wait.js'

/** The built CLI, as a user runs it (`npm test` builds first): the bundle. */
export const CLI = fileURLToPath(new URL('../../dist/bin/cidsync.js', import.meta.url))
/** The same CLI as tsc builds it, a module a file: where which modules a command loads can be seen. */
export const UNBUNDLED_CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url))

export interface CliResult { code: number | null, signal: NodeJS.Signals | null, stdout: string, stderr: string }

/** Runs `cidsync ...args` to completion, killing it after `timeoutMs`. */
export async function runCli (args: string[], options: SpawnOptions & { input?: string, timeoutMs?: number, script?: string } = {}): Promise<CliResult> {
  const child = spawn(process.execPath, [options.script ?? CLI, ...args], { ...options, stdio: ['pipe', 'pipe', 'pipe'] })
  const timer = setTimeout(() => child.kill('SIGKILL'), bound(options.timeoutMs ?? 20_000))
  let stdout = ''
  let stderr = ''
  child.stdout?.on('data', (d: Buffer) => { stdout += d.toString() })
  child.stderr?.on('data', (d: Buffer) => { stderr += d.toString() })
  child.stdin?.end(options.input ?? '')
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>(resolve => child.on('close', (c, s) => resolve([c, s])))
  clearTimeout(timer)
  return { code, signal, stdout, stderr }
}

/** A daemon process, its output gathered, killed after the test if still running. */
export class DaemonProcess {
  readonly child: ChildProcess
  stderr = ''
  private readonly exited: Promise<{ code: number | null, signal: NodeJS.Signals | null }>
  /**
   * How it ended, set on 'close': once its output has all been read. `child.exitCode` is set on
   * 'exit', which can come before the last lines of stderr: wait on this, then read `stderr`.
   */
  ended: { code: number | null, signal: NodeJS.Signals | null } | undefined

  /** `wrap` runs the daemon through another command (e.g. `unshare`), given the node command line. */
  constructor (args: string[], options: SpawnOptions & { wrap?: (command: string[]) => string[] } = {}) {
    const command = [process.execPath, CLI, 'daemon', ...args]
    const [file, ...rest] = options.wrap?.(command) ?? command
    this.child = spawn(file as string, rest, { ...options, stdio: ['ignore', 'ignore', 'pipe'] })
    this.child.stderr?.on('data', (d: Buffer) => { this.stderr += d.toString() })
    this.exited = new Promise(resolve => this.child.on('close', (code, signal) => { this.ended = { code, signal }; resolve({ code, signal }) }))
    running.push(this)
  }

  /** Waits for a log line whose `msg` is `message`; fails after `ms` or if the process exits first. */
  async logged (message: string, ms = 15_000): Promise<Record<string, unknown>> {
    const deadline = Date.now() + bound(ms)
    for (;;) {
      // Only whole lines: a long line (a stack, a status object) can arrive in two reads, and its
      // first half is not JSON yet.
      for (const line of this.stderr.slice(0, this.stderr.lastIndexOf('\n') + 1).split('\n')) {
        if (!line.startsWith('{')) continue
        const event = JSON.parse(line) as Record<string, unknown>
        if (event.msg === message) return event
      }
      // Gone and its stderr read to the end: what it logged is all here, so it never will.
      if (this.ended !== undefined) throw new Error(`the daemon exited (${this.child.exitCode ?? this.child.signalCode}) before logging "${message}":\n${this.stderr}`)
      if (Date.now() > deadline) throw new Error(`no "${message}" after ${bound(ms)} ms:\n${this.stderr}`)
      await new Promise(resolve => setTimeout(resolve, 25))
    }
  }

  /** Sends a signal and waits for the exit; answers how long it took. */
  async stop (signal: NodeJS.Signals = 'SIGTERM', ms = 15_000): Promise<{ code: number | null, ms: number }> {
    const started = Date.now()
    this.child.kill(signal)
    const timer = setTimeout(() => this.child.kill('SIGKILL'), bound(ms))
    const { code } = await this.exited
    clearTimeout(timer)
    return { code, ms: Date.now() - started }
  }
}

const running: DaemonProcess[] = []
afterEach(() => {
  for (const d of running.splice(0)) if (d.child.exitCode === null && d.child.signalCode === null) d.child.kill('SIGKILL')
})
