import { join } from 'node:path'
import { type Config, STATE_NAMES } from '../../config/index.js'
import { makeDirsSync } from '../../util/make-dirs.js'
import type { DownloadProgress, FetchInit } from './segment-fetch.js'
import type { ProgressOptions } from '../../util/progress.js'
import { acceptsUnencrypted } from './unencrypted-policy.js'

/** Where fetched publishes are opened, in the state dir. */
export const SNAPSHOTS_DIR = STATE_NAMES.snapshots

export interface ReadContextOptions extends ProgressOptions<DownloadProgress> {
  /** Names the caller's files in the snapshots dir and in its messages. */
  readonly label: string
  /** Default: the config's. A publish bound to another namespace or network is refused. */
  readonly namespace?: string
  readonly network?: string
  /** Default: the snapshots dir, made 0700 if missing. */
  readonly dir?: string
  /** The process's, as its `Repository` read it once (undefined: none set). */
  readonly passphrase: string | undefined
  /** `--allow-unencrypted`: accept a publish without a cipher although this device encrypts. */
  readonly allowUnencrypted?: boolean
}

/**
 * What reading a publish needs, built one way for every caller: the state dir, the namespace
 * binding, the passphrase and the unencrypted policy. A hand-built one could forget the binding.
 */
export function readContext (config: Config, options: ReadContextOptions): FetchInit {
  const dir = options.dir ?? join(config.stateDir, SNAPSHOTS_DIR)
  if (options.dir === undefined) makeDirsSync(dir, 0o700)
  return {
    stateDir: config.stateDir,
    dir,
    label: options.label,
    binding: { namespace: options.namespace ?? config.namespace, network: options.network ?? config.network },
    passphrase: options.passphrase,
    acceptUnencrypted: acceptsUnencrypted(config, options.allowUnencrypted),
    signal: options.signal,
    onProgress: options.onProgress
  }
}
