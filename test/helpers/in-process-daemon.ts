import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import pino from 'pino'
import { afterEach } from 'vitest'
import { loadConfig } from '../../src/config/index.js'
import { Daemon, readStatusToken, type StatusDocument } from '../../src/daemon/index.js'
import { httpGet } from './http.js'
import { until, within } from './wait.js'

const running: Daemon[] = []
afterEach(async () => { for (const d of running.splice(0)) await d.stop() })

export interface StartedDaemon { daemon: Daemon, port: number, token: string, config: string, notes: string }

/**
 * A daemon in this process over `dir/notes` (embedded service, status on port 0), started and
 * watching; stopped after the test. `toml` is appended to the config.
 */
export async function startInProcessDaemon (dir: string, toml = ''): Promise<StartedDaemon> {
  const notes = join(dir, 'notes')
  await mkdir(notes, { recursive: true })
  const config = join(dir, 'config.toml')
  await writeFile(config, `state_dir = "state"
[[folders]]
name = "notes"
path = "notes"
[status]
listen = "127.0.0.1:0"
[watch]
settle_ms = 20
${toml}`)
  const daemon = new Daemon({ logger: pino({ level: 'silent' }) }, { config: loadConfig({ configPath: config, env: {} }) })
  running.push(daemon)
  await within(daemon.start(), 10_000, 'the daemon to start')
  await within(daemon.current(), 10_000, 'the startup scan')
  await within(daemon.watchingAll(), 10_000, 'the watches')
  const port = Number(daemon.statusAddress?.split(':').pop())
  return { daemon, port, token: readStatusToken(join(dir, 'state')) as string, config, notes }
}

export async function statusOf (port: number): Promise<StatusDocument> {
  return JSON.parse((await httpGet({ port }, '/status')).body) as StatusDocument
}

/** Waits until the embedded service is reached and the first reconciliation ran. */
export async function untilReached (port: number): Promise<StatusDocument> {
  return await until(async () => {
    const s = await statusOf(port)
    return s.publish !== null && s.reconcile?.lastRun != null ? s : undefined
  }, 20_000, 'the service to be reached and reconciled')
}
