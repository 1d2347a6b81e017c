import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino, { type Logger } from 'pino'
import { beforeAll, onTestFinished } from 'vitest'
import { loadConfig } from '../../src/config/index.js'
import { Daemon, readStatusToken, type StatusDocument } from '../../src/daemon/index.js'
import { httpGet } from './http.js'
import { until, within } from './wait.js'
import { configToml, testConfig, type TestConfigOptions } from './config-file.js'


export interface StartedDaemon { daemon: Daemon, port: number, token: string, config: string, notes: string }

export interface InProcessDaemonOptions {
  /** The whole config instead of the usual one (the sections are then ignored). */
  readonly text?: string
  readonly logger?: Logger
}

/**
 * A daemon in this process over `dir/notes` (embedded service, status on port 0), started, current
 * and watching; stopped when the test finishes, before its temp dir goes (finish hooks run last
 * registered first: a daemon stopping after would write its state dir back into being). `config`
 * is laid over the usual test config ({@link testConfig}), section by section, or is TOML appended
 * to it. Stopping it in the test as well is fine: a stop is done once.
 */
export async function startInProcessDaemon (dir: string, config: TestConfigOptions | string = {}, options: InProcessDaemonOptions = {}): Promise<StartedDaemon> {
  return await launch(dir, config, options, (daemon) => { onTestFinished(async () => { await daemon.stop() }) })
}

/**
 * One daemon for every test of the describe block this is called in, for tests that only ask it
 * questions: started before the first (as {@link startInProcessDaemon} starts one, in a temp dir of
 * its own), stopped after the last, before its dir goes. Answers a getter for the started daemon.
 */
export function sharedInProcessDaemon (config: TestConfigOptions | string = {}): () => StartedDaemon {
  let started: StartedDaemon | undefined
  beforeAll(async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cidsync-test-'))
    let daemon: Daemon | undefined
    const cleanup = async (): Promise<void> => {
      await daemon?.stop()
      await rm(dir, { recursive: true, force: true, maxRetries: 3 })
    }
    try {
      started = await launch(dir, config, {}, (made) => { daemon = made })
    } catch (err) {
      await cleanup()
      throw err
    }
    return cleanup
  })
  return () => {
    if (started === undefined) throw new Error('the shared daemon is not started: call sharedInProcessDaemon in a describe block')
    return started
  }
}

/** Writes the config, makes the daemon, hands it to `own` (who stops it), starts it and waits until it watches. */
async function launch (dir: string, config: TestConfigOptions | string, options: InProcessDaemonOptions, own: (daemon: Daemon) => void): Promise<StartedDaemon> {
  const notes = join(dir, 'notes')
  await mkdir(notes, { recursive: true })
  const path = join(dir, 'config.toml')
  const text = options.text ?? (typeof config === 'string' ? `${configToml(testConfig())}\n${config}` : configToml(testConfig(config)))
  await writeFile(path, text)
  const loaded = loadConfig({ configPath: path, env: {} })
  const daemon = new Daemon({ logger: options.logger ?? pino({ level: 'silent' }) }, { config: loaded })
  own(daemon)
  await within(daemon.start(), 10_000, 'the daemon to start')
  await within(daemon.current(), 10_000, 'the startup scan')
  await within(daemon.watchingAll(), 10_000, 'the watches')
  const port = Number(daemon.statusAddress?.split(':').pop())
  return { daemon, port, token: readStatusToken(loaded.stateDir) ?? '', config: path, notes }
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

/**
 * Adds `daemon` to `running` and stops it when the test finishes, unless the test took it off the
 * list (having stopped it): before the test's temp dir goes, since finish hooks run last
 * registered first. An `afterEach` would stop it after, and a stopping daemon writes its state dir
 * back into being.
 */
export function stopWhenFinished (running: Daemon[], daemon: Daemon): void {
  running.push(daemon)
  onTestFinished(async () => {
    const at = running.indexOf(daemon)
    if (at < 0) return
    running.splice(at, 1)
    await daemon.stop()
  })
}
