import { describe, expect, it, onTestFinished } from 'vitest'
import { spawn } from 'node:child_process'
import { stat, readFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { acquireLock, DAEMON_INFO_FILE, LOCK_FILE, readDaemonInfo } from '../../src/state-lock/index.js'
import { LockHeldError } from '../../src/errors.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'

const BUILT_LOCK = fileURLToPath(new URL('../../dist/state-lock/index.js', import.meta.url))

describe('the state dir lock', () => {
  it('admits one holder, names it to the next, and says who holds it in a private daemon.json', async () => {
    const dir = await useTempDir()
    const first = acquireLock(dir)
    onTestFinished(() => { first.release() })
    const err = (() => { try { acquireLock(dir); return undefined } catch (e) { return e } })()
    expect(err).toBeInstanceOf(LockHeldError)
    expect((err as Error).message).toContain(`pid ${process.pid}`)
    expect(readDaemonInfo(dir)).toMatchObject({ pid: process.pid })
    first.update({ status: '127.0.0.1:1234' })
    expect(JSON.parse(await readFile(join(dir, DAEMON_INFO_FILE), 'utf8'))).toMatchObject({ pid: process.pid, status: '127.0.0.1:1234' })
    for (const name of [LOCK_FILE, DAEMON_INFO_FILE]) expect((await stat(join(dir, name))).mode & 0o777).toBe(0o600)
    first.release()
    expect(existsSync(join(dir, DAEMON_INFO_FILE))).toBe(false)
    acquireLock(dir).release()
  })

  it('is free again once its holder is killed with SIGKILL: no stale lock to clean up', async () => {
    const dir = await useTempDir()
    // Another process takes the lock and holds it until it is killed.
    const holder = spawn(process.execPath, ['--input-type=module', '-e',
      `const { acquireLock } = await import(${JSON.stringify(BUILT_LOCK)}); globalThis.held = acquireLock(process.argv[1]); console.log('held'); setInterval(() => {}, 1000)`, dir],
    { stdio: ['ignore', 'pipe', 'inherit'] })
    onTestFinished(() => { holder.kill('SIGKILL') })
    let out = ''
    holder.stdout.on('data', (chunk: Buffer) => { out += chunk.toString() })
    await until(() => out.includes('held') ? true : undefined, 30_000, 'the other process to hold the lock')
    expect(() => acquireLock(dir)).toThrow(LockHeldError)
    holder.kill('SIGKILL')
    await new Promise(resolve => holder.once('exit', resolve))
    // Its daemon.json is left behind, but the lock itself went with the process.
    const mine = acquireLock(dir)
    expect(readDaemonInfo(dir)).toMatchObject({ pid: process.pid })
    mine.release()
  })
})
