import { existsSync } from 'node:fs'
import { basename, join, resolve } from 'node:path'
import type { Command } from 'commander'
import { DEFAULT_IGNORE, DEFAULT_RETENTION_SCHEDULE, defaultConfigPath, loadConfig, renderConfigTemplate, hasSnapshotPassphrase } from '../../config/index.js'
import { ConfigError, UsageError } from '../../errors.js'
import { writeFileAtomicSync } from '../../util/atomic-write.js'
import { action } from '../run.js'
import { makeDirsSync } from '../../util/make-dirs.js'
import { shellWord } from '../../util/shell-word.js'
import type { Config } from '../../config/index.js'
import type { DeviceBundle } from '../device-bundle.js'

interface InitOptions { config?: string, folder?: string[], stateDir?: string, force?: boolean, key?: string, remote?: string, join?: string }


function folderName (path: string, taken: Set<string>): string {
  const base = basename(path).replace(/[^A-Za-z0-9._-]/g, '-').replace(/^[^A-Za-z0-9]+/, '') || 'folder'
  let name = base.slice(0, 60)
  for (let n = 2; taken.has(name); n++) name = `${base.slice(0, 56)}-${n}`
  taken.add(name)
  return name
}

/** How this device reaches the others' service: the embedded default, `--remote URL`, or a join file's. */
type ServiceSet = 'embedded' | 'remote' | 'joined'

/**
 * A device given another's key joins their history: what it needs next is what they published,
 * before its daemon starts (a restore refuses while one runs, and a daemon's index needs --force).
 */
function joining (withConfig: string, daemon: string, service: ServiceSet, foldersMade = false): string {
  return 'next, to bring back what the other devices published (docs/operations.md, "Moving to a new device"):\n' +
    (service === 'remote' ? `  cidsync login --wallet-key-file FILE${withConfig}   # the account the other devices use\n` : service === 'embedded' ? '  set [service] as on the other device (the embedded default is an account of its own per service dir)\n' : '') +
    `  cidsync restore${withConfig}           # the index: every device's files, as a list\n` +
    `  cidsync restore --files${withConfig}   # their content, into each folder${foldersMade ? '' : ' (create the folders first, or add --to DIR)'}\n` +
    `  ${daemon}\n`
}

/**
 * Said, not only written: the file now holds rules that decide which publishes are forgotten.
 * A joined device says whose they are, and when its daemon runs them, which the join file set.
 */
function retentionLine (config: Config, target: string, bundle: DeviceBundle | undefined): string {
  const r = config.retention
  if (r === undefined) return bundle?.retention === null ? `no [retention] in ${target}, as on the other device: every publish is kept (docs/retention.md)\n` : ''
  const whose = bundle?.retention === undefined || bundle.retention === null ? 'retention policy' : 'the other device\'s retention policy'
  const when = r.schedule === DEFAULT_RETENTION_SCHEDULE ? 'weekly' : `on its schedule "${r.schedule}"`
  return `${whose} written under [retention] in ${target}: the daemon forgets and prunes by it ${when} (docs/retention.md)\n`
}

/** `--remote`, checked before anything is written: an http(s) base URL. */
function remoteUrl (text: string): string {
  let parsed: URL
  try {
    parsed = new URL(text)
  } catch {
    throw new UsageError(`--remote ${JSON.stringify(text)} is not a URL: give the service's base URL, e.g. http://127.0.0.1:8790`)
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new UsageError(`--remote ${JSON.stringify(text)} is not an http(s) URL: give the service's base URL, e.g. http://127.0.0.1:8790`)
  return text
}

const INIT_HELP = `
What it writes:
The config goes to --config, else $CIDSYNC_CONFIG, else the XDG config dir
(~/.config/cidsync/config.toml on Linux).
Every key is there, commented, with its default.
Each --folder becomes a [[folders]] table with store = true, so its files' content is stored too.
The state dir is made 0700; it holds the index and the snapshot key init makes.
With --key, init installs the key another device exported, and says how to restore from there.
With --remote URL, the service's five URLs come from one.
With --join FILE, the service, key and credentials come from another device's \`cidsync key export --bundle\`.
An existing config is kept; --force replaces it.
docs/configuration.md lists every key.`

export function registerInit (program: Command): void {
  program.command('init')
    .description('write a commented config file and create the state dir')
    .addHelpText('after', INIT_HELP)
    .option('--config <path>', 'where to write the config (default: $CIDSYNC_CONFIG, else the XDG config dir)')
    .option('--folder <path...>', 'folders to watch (default: ~/notes, as an example to edit)')
    .option('--state-dir <dir>', 'where the index and keys live (default: $STATE_DIRECTORY, else the XDG state dir)')
    .option('--force', 'overwrite an existing config file')
    .option('--key <key|->', 'use the snapshot key exported on another device (`-`: from standard input) instead of making one')
    .option('--remote <url>', 'use the service at this URL (a self-hosted `cidsync local-service`) instead of the embedded one')
    .option('--join <file|->', 'join another device\'s account: its service, snapshot key and credentials, from `cidsync key export --bundle FILE` there')
    .action(action(async (options: InitOptions) => {
      const remote = options.remote === undefined ? undefined : remoteUrl(options.remote)
      const target = resolve(options.config ?? (process.env.CIDSYNC_CONFIG !== undefined && process.env.CIDSYNC_CONFIG !== '' ? process.env.CIDSYNC_CONFIG : defaultConfigPath(process.env)))
      if (existsSync(target) && options.force !== true) {
        throw new ConfigError(`${target} already exists: edit it, or run \`cidsync init --force\` to replace it`)
      }
      if (options.join !== undefined && options.key !== undefined) throw new UsageError('--join brings the snapshot key with it: leave out --key')
      if (options.join !== undefined && options.remote !== undefined) throw new UsageError('--join brings the service with it: leave out --remote')
      // Read and checked before anything is written: a bad join file leaves nothing behind.
      const joiner = options.join === undefined ? undefined : await import('./init-join.js')
      const bundle = options.join === undefined ? undefined : await joiner?.readBundle(options.join)
      joiner?.checkCredentialsFree(target, options.force === true)
      const twice = options.folder?.map(p => resolve(p)).find((p, i, all) => all.indexOf(p) !== i)
      // Else two tables of one path: every file indexed, stored and listed twice, under two names.
      if (twice !== undefined) throw new UsageError(`--folder ${twice} is given twice: each folder is watched once, under one name`)
      const taken = new Set<string>()
      const folders = options.folder?.map(p => ({ name: folderName(resolve(p), taken), path: resolve(p) })) ??
        (bundle !== undefined && bundle.folders.length > 0 ? bundle.folders : undefined)
      let text = renderConfigTemplate(folders, remote)
      if (options.stateDir !== undefined) {
        text = text.replace(/^# state_dir = .*$/m, `state_dir = ${JSON.stringify(resolve(options.stateDir))}`)
      }
      if (joiner !== undefined && bundle !== undefined) text = joiner.joinedConfigText(text, bundle)
      writeFileAtomicSync(target, text, { mode: 0o644 })
      const config = loadConfig({ configPath: target })
      makeDirsSync(config.stateDir, 0o700)
      const retention = retentionLine(config, target, bundle)
      if (joiner !== undefined && bundle !== undefined) {
        const done = await joiner.completeJoin(target, config, bundle, options.folder === undefined && bundle.folders.length > 0)
        const withConfig = target === resolve(defaultConfigPath(process.env)) ? '' : ` --config ${shellWord(target)}`
        process.stdout.write(`wrote ${target} (the other device's service and settings)\nstate dir ${config.stateDir}\n${retention}${done}${joining(withConfig, `cidsync daemon${withConfig}`, 'joined', options.folder === undefined && bundle.folders.length > 0)}`)
        if (options.join !== '-') process.stderr.write(`cidsync: delete ${options.join} now: it holds the account's keys, and this device no longer needs it\n`)
        return
      }
      for (const folder of config.folders) {
        if (!existsSync(folder.path)) process.stderr.write(`cidsync: warning: the folder ${folder.path} does not exist: it is written to the config, and the daemon shows it as an error until it is created\n`)
        for (const e of folder.exclude ?? []) {
          process.stderr.write(`cidsync: warning: ${e.what} ${e.dir} lies inside the watched folder ${folder.name} (${folder.path}): it is left out of the folder, never indexed\n`)
        }
      }
      let keyLine = ''
      if (options.key !== undefined) {
        const { installKey, readKeyText } = await import('./key.js')
        const { KEY_FILE } = await import('../../snapshot/index.js')
        const { id } = await installKey(config.stateDir, await readKeyText(options.key), false)
        keyLine = `snapshot key ${id} (imported) in ${join(config.stateDir, KEY_FILE)}\n`
      } else if (config.snapshot.encryption !== 'none' && !hasSnapshotPassphrase()) {
        const { writingKey, KEY_FILE } = await import('../../snapshot/index.js')
        const key = writingKey(config.stateDir)
        keyLine = `snapshot key ${key.keyId} in ${join(config.stateDir, KEY_FILE)} (carry it to other devices with \`cidsync key export\`)\n`
      }
      // The daemon finds the file itself only at the default path: anywhere else, the next command names it.
      const withConfig = target === resolve(defaultConfigPath(process.env)) ? '' : ` --config ${shellWord(target)}`
      const daemon = `cidsync daemon${withConfig}`
      const stored = config.folders.filter(f => f.store === true).map(f => f.name)
      const storeLine = stored.length === 0 ? '' : `content of ${stored.join(', ')} is stored too (store = true; ${config.content.encryption === 'none' ? 'plain, as [content] encryption = "none" says' : 'sealed with the snapshot key'}), so any device can bring each file back; \`store = false\` keeps only the index\n`
      const remoteLine = remote === undefined ? '' : `service ${remote} (mode = "remote"); sign in first: cidsync login --wallet-key-file FILE${withConfig}\n`
      // Said, not only written: a file under one of these is never indexed, and nothing else says so.
      const ignoreLine = `ignored in each folder: ${DEFAULT_IGNORE.join(', ')}; change a folder's ignore = in ${target}\n`
      process.stdout.write(`wrote ${target}\nstate dir ${config.stateDir}\n${ignoreLine}${retention}${keyLine}${storeLine}${remoteLine}` +
        (options.key !== undefined ? `${folders === undefined ? 'edit [[folders]] to name what to watch (each folder by the name the other devices give it); ' : ''}${joining(withConfig, daemon, remote !== undefined ? 'remote' : 'embedded')}`
          : folders === undefined ? `edit [[folders]] to name what to watch, then run: ${daemon}\n` : `next: ${daemon}\n`))
    }))
}
