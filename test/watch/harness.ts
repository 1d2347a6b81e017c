import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach } from 'vitest'
import pino from 'pino'
import { openIndex, type Index } from '../../src/index/index.js'
import { createWatcher, type Watcher } from '../../src/watch/index.js'
import { within } from '../helpers/wait.js'

export const DEVICE = '00000000-0000-4000-8000-000000000001'

export interface Harness { root: string, index: Index, watcher: Watcher }
const open: Harness[] = []

afterEach(async () => {
  for (const h of open.splice(0)) {
    await h.watcher.stop()
    h.index.close()
  }
})

export interface HarnessOptions {
  readonly ignore?: string[]
  readonly followSymlinks?: boolean
  /** Leave the folder as it is (missing, say) instead of creating it. */
  readonly keepRoot?: boolean
  /** How long the writer gathers changes before a commit. */
  readonly flushMs?: number
  /** The first retry of a skipped path. */
  readonly skipRetryMs?: number
}

/** A watcher over `dir/notes`, in this process, started and current. */
export async function startWatching (dir: string, options: HarnessOptions = {}): Promise<Harness> {
  const root = join(dir, 'notes')
  if (options.keepRoot !== true) await mkdir(root, { recursive: true })
  const index = openIndex(join(dir, 'state', 'index.sqlite'))
  const watcher = createWatcher({ index, logger: pino({ level: 'silent' }), deviceId: DEVICE }, {
    folders: [{ name: 'notes', path: root, ignore: options.ignore ?? [], followSymlinks: options.followSymlinks ?? false }],
    profile: 'kubo-cidv1',
    hashWorkers: 2,
    settleMs: 50,
    flushMs: options.flushMs,
    retry: { skipMinMs: options.skipRetryMs }
  })
  const harness = { root, index, watcher }
  open.push(harness)
  await within(watcher.start(), 20_000, 'the watcher to start')
  await within(watcher.current(), 20_000, 'the index to be current')
  return harness
}

/** The live rows' paths, sorted. */
export const livePaths = (h: Harness): string[] => h.index.entries.list({ deviceId: DEVICE }).map(e => e.path).sort()
