import type { Command } from 'commander'
import { loadConfig, hasSnapshotPassphrase } from '../../config/index.js'
import { UsageError } from '../../errors.js'
import { action } from '../run.js'
import { readSecretLine } from '../prompt.js'
import { makeDirsSync } from '../../util/make-dirs.js'
import { refuseOpenRedirect } from '../secret-stdout.js'
import { writeFileAtomicSync } from '../../util/atomic-write.js'

async function readStdin (): Promise<string> {
  let text = ''
  for await (const chunk of process.stdin) text += (chunk as Buffer).toString('utf8')
  return text
}

/** The key from the argument, a file, standard input, or (on a terminal) typed without echo. */
export async function readKeyText (argument: string | undefined): Promise<string> {
  if (argument !== undefined && argument !== '-') return argument
  if (argument === undefined && process.stdin.isTTY === true) return await readSecretLine('paste the key from `cidsync key export` (it is not shown), then Enter: ')
  return await readStdin()
}

/**
 * Installs a key carried from another device. A key here that never sealed anything (the one
 * `init` made, before any publish or restore) is replaced without `--force`.
 */
export async function installKey (stateDir: string, text: string, force: boolean): Promise<{ id: string, replacedUnused: boolean }> {
  const { importKey } = await import('../../snapshot/index.js')
  const { hasSyncState } = await import('../../sync/index.js')
  const unused = !hasSyncState(stateDir)
  try {
    return { id: importKey(stateDir, text, force), replacedUnused: false }
  } catch (err) {
    if (!unused || force) throw err
    if (!(err instanceof Error) || !err.message.includes('holds another key')) throw err
    return { id: importKey(stateDir, text, true), replacedUnused: true }
  }
}

const KEY_EXPORT_HELP = `
Carrying it:
The key seals every snapshot and stored file: store it like a password.
On the other device, run cidsync key import, or cidsync init --key -.
With CIDSYNC_SNAPSHOT_PASSPHRASE set, export refuses (exit 2): carry the passphrase instead.`

const KEY_IMPORT_HELP = `
Replacing a key:
On a terminal, it asks for the key without showing it.
The unused key init made is replaced without --force.
--force is only for a key that already sealed or opened snapshots, or a damaged or exposed one.`

export function registerKey (program: Command): void {
  const key = program.command('key').description('the snapshot encryption key: carry it to another device')
  key.command('export')
    .description('print this device\'s snapshot key (made now if there is none yet); keep it secret')
    .addHelpText('after', KEY_EXPORT_HELP)
    .option('--config <path>', 'config file')
    .option('--out <file>', 'write the key to FILE, made 0600 as it is created, instead of standard output')
    .option('--bundle <file>', 'write a join file instead: the service, the snapshot key and the account\'s credentials, for `cidsync init --join FILE` on another device (made 0600; - for a pipe)')
    .action(action(async (options: { config?: string, bundle?: string, out?: string }) => {
      const config = loadConfig({ configPath: options.config })
      if (options.bundle !== undefined) {
        makeDirsSync(config.stateDir, 0o700)
        const { exportBundle } = await import('./key-bundle.js')
        await exportBundle(config, options.bundle)
        return
      }
      // With a passphrase every snapshot is sealed with a key derived from it, so the key file
      // (made here on first use) would seal nothing: printing it would hand over a useless secret.
      if (hasSnapshotPassphrase()) {
        throw new UsageError('CIDSYNC_SNAPSHOT_PASSPHRASE is set, so snapshots are sealed with a key derived from the passphrase, not a key file: ' +
          'carry the passphrase to the other device (set CIDSYNC_SNAPSHOT_PASSPHRASE there too) instead of exporting a key')
      }
      // Before anything: `key export > file` made the file with the umask.
      if (options.out === undefined) refuseOpenRedirect('the snapshot key', '--out')
      makeDirsSync(config.stateDir, 0o700)
      const { exportKey } = await import('../../snapshot/index.js')
      const key = exportKey(config.stateDir)
      if (options.out !== undefined) {
        writeFileAtomicSync(options.out, `${key}\n`, { mode: 0o600 })
        process.stderr.write(`wrote the snapshot key to ${options.out} (mode 0600): store it like a password\n`)
        return
      }
      process.stdout.write(`${key}\n`)
      if (process.stdout.isTTY === true) process.stderr.write('this is the key to every snapshot of this index: store it like a password\n')
    }))
  key.command('import')
    .description('install a key exported on another device, so its snapshots open here')
    .addHelpText('after', KEY_IMPORT_HELP)
    .argument('[key]', 'the exported key; read from standard input when absent or -')
    .option('--config <path>', 'config file')
    .option('--force', 'replace a different key already here, even one that sealed snapshots')
    .action(action(async (text: string | undefined, options: { config?: string, force?: boolean }) => {
      const config = loadConfig({ configPath: options.config })
      makeDirsSync(config.stateDir, 0o700)
      const { id, replacedUnused } = await installKey(config.stateDir, await readKeyText(text), options.force === true)
      process.stdout.write(`imported key ${id} into ${config.stateDir}${replacedUnused ? ' (replacing the unused one `init` made)' : ''}\n`)
    }))
}
