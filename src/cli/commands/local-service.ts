import { existsSync } from 'node:fs'
import { join } from 'node:path'
import type { Command } from 'commander'
import { loadConfig, isLoopbackHost, DEFAULT_MAX_CAR_BYTES, DEFAULT_MAX_IPNS_KEYS_PER_ACCOUNT, DEFAULT_SIGNUP_RATE_PER_HOUR, type Config } from '../../config/index.js'
import { AbortedError, ListenError, UsageError } from '../../errors.js'
import { action } from '../run.js'
import { writeFileAtomicSync } from '../../util/atomic-write.js'
import { refuseOpenRedirect } from '../secret-stdout.js'

interface ServeOptions { config?: string, dir?: string, listen: string, signup?: string, pageSize?: number, dealDelayMs?: number, reclaimDelayMs: number, admin: boolean }

/** How long after the last delete the self-hosted service reclaims space on its own. */
const DEFAULT_RECLAIM_DELAY_MS = 60_000

function hostPort (listen: string): { host: string, port: number } {
  const match = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(listen)
  if (match === null || Number(match[2]) > 65535) throw new UsageError(`--listen ${listen}: expected HOST:PORT, e.g. 127.0.0.1:8790`)
  return { host: (match[1] as string).replace(/^\[(.*)\]$/, '$1'), port: Number(match[2]) }
}

const int = (v: string): number => Number.parseInt(v, 10)

/** With `--dir` and no `--config`, no file is read: `[local_service]`'s defaults. */
const DEFAULT_LOCAL_SERVICE: Config['localService'] = { signup: undefined, allow: [], signupsPerHour: DEFAULT_SIGNUP_RATE_PER_HOUR, maxBytesPerAccount: 0, maxBytesTotal: 0, maxIpnsKeysPerAccount: DEFAULT_MAX_IPNS_KEYS_PER_ACCOUNT, maxConnections: 128, maxCarBytes: DEFAULT_MAX_CAR_BYTES, hosts: [] }

function signupOption (value: string | undefined): Config['localService']['signup'] {
  if (value === undefined || value === 'open' || value === 'allowlist' || value === 'invite' || value === 'closed') return value
  throw new UsageError(`--signup ${value}: expected open, allowlist, invite or closed`)
}

/** What the operator should know of the sign-up in force: who gets in, and how to change it. */
function signupNote (signup: string, defaulted: boolean, allowed: number, perHour: number): string {
  // Where the wallets go, and how a user learns theirs: the operator is told what to write, not only the setting's name.
  const howToAllow = 'signup = "allowlist" with allow = ["0x..."] under [local_service] in the file --config names (a wallet\'s address: `cidsync login` against this service prints it when refused)'
  if (signup === 'open') {
    const rate = perHour === 0 ? 'with no limit of new accounts an hour' : `at most ${perHour} new accounts an hour`
    return ` (anyone who reaches it may make an account, ${rate}: --signup invite, allowlist or closed, or [local_service] signup, keeps others out)`
  }
  if (signup === 'invite') return ' (a new wallet needs a code from `cidsync local-service invite`, used once)'
  if (signup === 'allowlist') {
    return allowed === 0
      ? ` (but no wallet is in [local_service] allow: no new account can be made; ${howToAllow})`
      : ` (${allowed === 1 ? '1 wallet' : `${allowed} wallets`} in [local_service] allow may make an account, no other)`
  }
  if (defaulted) return ` (the default beyond loopback: no new account can be made; to let your wallets in: ${howToAllow}; or signup = "invite", with a code a person from \`cidsync local-service invite\`; --signup open lets anyone)`
  return ''
}

/**
 * The config's `service.dir` is the embedded service's: with `mode = "remote"` the service that
 * checks the token runs elsewhere, on a dir only its `--dir` names, so guessing would sign for nobody.
 */
function tokenDirFromConfig (configPath: string | undefined): string {
  const config = loadConfig({ configPath })
  if (config.service.mode === 'remote') {
    throw new UsageError(`the config uses [service] mode = "remote" (pointer service ${config.service.pointerUrl}): ` +
      'its tokens are signed by the running `cidsync local-service`; pass --dir with the directory it was started with (it says "data in DIR" at start)')
  }
  return config.service.dir
}

const LOCAL_SERVICE_HELP = `
Sharing one:
Point other machines' [service] URLs at the URL it prints, with mode = "remote".
Anyone who reaches the port may sign up on loopback.
Beyond loopback, sign-up is closed unless --signup or [local_service] signup says otherwise.
invite lets one new wallet make an account: cidsync login --invite CODE.
It says at start what each account, and all of them together, may store.
docs/local-service.md, "Sharing one safely", says how to share one.

Admin routes:
The routes under /local/ (tokens, faults) answer only on loopback, never to a web page.
They need the token in DIR/admin.token (0600), which it names at start.
--no-admin turns them off.`

const LOCAL_SERVICE_RECLAIM_HELP = `
What it gives back:
Blocks no live upload, pointer or IPNS name holds are dropped.
A pack whose dead share passes 25% is rewritten, and its file removed.
Deleted uploads then stop counting against their account's quota.
The running service may go on meanwhile: uploads and reads never fail for it.
Without --dir, it is the config's embedded service.dir.
\`cidsync local-service\` runs it on its own a minute after deletes (--reclaim-delay-ms).`

const LOCAL_SERVICE_TOKEN_HELP = `
Which service accepts it:
The token is signed with the secret in --dir: only the service serving that directory accepts it.
A --dir that holds no service data is refused.
Without --dir, it is the config's embedded service.dir; that is refused with mode = "remote".
--out FILE writes it 0600.
Printed into a file the shell just made readable by others (> FILE), it makes that file 0600 first.`

export function registerLocalService (program: Command): void {
  const command = program.command('local-service')
    .description('run the local implementation of the service in the foreground and print its base URL')
    .addHelpText('after', LOCAL_SERVICE_HELP)
    .option('--config <path>', 'config file (for the default --dir)')
    .option('--dir <dir>', 'where it keeps its data (default: the config\'s service.dir)')
    .option('--listen <host:port>', 'where it listens', '127.0.0.1:0')
    .option('--signup <open|allowlist|invite|closed>', 'who may make an account (overrides [local_service] signup; unset: open on loopback, closed beyond it)')
    .option('--page-size <n>', 'records per page of the uploads listing', int)
    .option('--deal-delay-ms <n>', 'how long until a requested deal appears', int)
    .option('--reclaim-delay-ms <n>', 'reclaim deleted uploads\' space this long after the last delete (0: only `local-service reclaim`)', int, DEFAULT_RECLAIM_DELAY_MS)
    .option('--no-admin', 'do not serve the admin routes (/local/...: tokens, faults, seeding, the request log)')
    .enablePositionalOptions()
    .action(action(async (options: ServeOptions) => {
      const config = options.config !== undefined || options.dir === undefined ? loadConfig({ configPath: options.config }) : undefined
      const dir = options.dir ?? (config as Config).service.dir
      const { host, port } = hostPort(options.listen)
      if (!Number.isSafeInteger(options.reclaimDelayMs) || options.reclaimDelayMs < 0) throw new UsageError('--reclaim-delay-ms: expected a whole number of milliseconds, 0 or more')
      const policy = { ...(config?.localService ?? DEFAULT_LOCAL_SERVICE), signup: signupOption(options.signup) ?? config?.localService.signup }
      if (!isLoopbackHost(host)) process.stderr.write(`cidsync: warning: listening on ${host}, beyond this machine, with no TLS\n`)
      const { startLocalService } = await import('../../local-service/index.js')
      const service = await startLocalService({ dir, host, port, pageSize: options.pageSize, dealDelayMs: options.dealDelayMs, admin: options.admin, policy, maxConnections: policy.maxConnections, carLimits: { maxBytes: policy.maxCarBytes }, hosts: policy.hosts, reclaimAfterDeleteMs: options.reclaimDelayMs === 0 ? undefined : options.reclaimDelayMs, log: line => { process.stderr.write(`cidsync: ${line}\n`) } })
        .catch((err: unknown) => {
          const code = (err as { code?: unknown }).code
          if (code !== 'EADDRINUSE' && code !== 'EADDRNOTAVAIL' && code !== 'EACCES') throw err
          throw new ListenError(`the local service cannot listen on ${options.listen} (${code}): ${code === 'EADDRINUSE' ? 'another program listens there (another `cidsync local-service`?): stop it, or give --listen another port' : code === 'EACCES' ? 'a port under 1024 needs privileges: give --listen a port above 1023' : 'this machine has no such address: give --listen one of its own (127.0.0.1:PORT)'}`, { cause: err })
        })
      process.stdout.write(`${service.url}\n`)
      const admin = service.adminTokenPath === undefined
        ? 'admin routes off'
        : `admin routes under /local/ need Authorization: Bearer <the token in ${service.adminTokenPath}>`
      process.stderr.write(`local service on ${service.url}, data in ${dir}; ${admin}; Ctrl-C stops it\n`)
      // 0.0.0.0 and :: are where it listens, not an address to connect to: the URLs others set name this machine.
      if (host === '0.0.0.0' || host === '::' || host === '[::]') process.stderr.write(`other machines reach it at http://<this machine's address>:${new URL(service.url).port} (the [service] URLs they set), not at ${service.url}\n`)
      const quota = (n: number, what: string): string => n === 0 ? `no limit of ${what}` : `${n} ${what}`
      process.stderr.write(`sign-up ${service.signup}${signupNote(service.signup, policy.signup === undefined, policy.allow.length, policy.signupsPerHour)}; ` +
        `per account: ${quota(policy.maxBytesPerAccount, 'bytes')}, ${quota(policy.maxIpnsKeysPerAccount, 'IPNS keys')}; ` +
        `all accounts together: ${quota(policy.maxBytesTotal, 'bytes')}\n`)
      // Each account made is another quota: with sign-up open, only a total bounds the disk.
      if (service.signup === 'open' && policy.maxBytesPerAccount > 0 && policy.maxBytesTotal === 0) {
        process.stderr.write('cidsync: warning: sign-up is open and [local_service] max_bytes_total is 0: every new account gets its own max_bytes_per_account. ' +
          'Set max_bytes_total, or signup = "invite" (docs/local-service.md, "Sharing one safely")\n')
      }
      await new Promise<void>(resolve => {
        process.once('SIGINT', () => resolve())
        process.once('SIGTERM', () => resolve())
      })
      await service.stop()
    }))
  command.command('reclaim')
    .description('give back the space of deleted uploads: drop the blocks nothing holds, rewrite packs mostly dead')
    .addHelpText('after', LOCAL_SERVICE_RECLAIM_HELP)
    .option('--config <path>', 'config file (for the default --dir)')
    .option('--dir <dir>', 'the local service\'s data (default: the config\'s service.dir)')
    .option('--json', 'print what it freed as JSON')
    .action(action(async (options: { config?: string, dir?: string, json?: boolean }) => {
      const dir = options.dir ?? tokenDirFromConfig(options.config)
      if (!existsSync(join(dir, 'service.sqlite'))) {
        throw new UsageError(`no local service data in ${dir} (no service.sqlite): pass --dir with the directory the running \`cidsync local-service\` was started with (it says "data in DIR" at start)`)
      }
      const { reclaimDir } = await import('../../local-service/index.js')
      const stop = new AbortController()
      const onSignal = (): void => { stop.abort() }
      process.once('SIGINT', onSignal)
      process.once('SIGTERM', onSignal)
      try {
        const result = await reclaimDir(dir, { signal: stop.signal }).catch((err: unknown) => {
          // Stopped: what it did so far holds, and the next run finishes the rest.
          if (stop.signal.aborted) throw new AbortedError('the reclaim was stopped: what it gave back so far stays given back; run it again to finish')
          throw err
        })
        if (options.json === true) { process.stdout.write(`${JSON.stringify(result)}\n`); return }
        const count = (n: number, what: string): string => `${n} ${what}${n === 1 ? '' : 's'}`
        process.stdout.write(`freed ${count(result.blocksFreed, 'block')} (${result.bytesFreed} bytes); ${count(result.uploadsForgotten, 'deleted upload')} no longer counted\n` +
          `rewrote ${count(result.packsRewritten, 'pack')}, removed ${count(result.packsRemoved, 'pack file')}: ${result.diskBytesFreed} bytes back on disk\n` +
          `${result.deadBytesLeft} dead bytes left in packs under the rewrite threshold\n`)
        if (result.opaqueBlocks > 0) process.stderr.write(`${result.opaqueBlocks} kept blocks are of a codec whose links this service cannot read: each keeps itself alone\n`)
      } finally {
        process.off('SIGINT', onSignal)
        process.off('SIGTERM', onSignal)
      }
    }))
  command.command('invite')
    .description('make an invitation code: with signup = "invite", it lets one new wallet make an account, once')
    .option('--config <path>', 'config file (for the default --dir)')
    .option('--dir <dir>', 'the local service\'s data (default: the config\'s service.dir)')
    .option('--ttl-seconds <n>', 'how long it is valid (default: 7 days)', int)
    .action(action(async (options: { config?: string, dir?: string, ttlSeconds?: number }) => {
      const dir = options.dir ?? tokenDirFromConfig(options.config)
      // As for a token: a code made where no running service reads would be refused without a word why.
      if (!existsSync(join(dir, 'service.sqlite'))) {
        throw new UsageError(`no local service data in ${dir} (no service.sqlite): pass --dir with the directory the running \`cidsync local-service\` was started with (it says "data in DIR" at start)`)
      }
      if (options.ttlSeconds !== undefined && (!Number.isInteger(options.ttlSeconds) || options.ttlSeconds < 60)) throw new UsageError('--ttl-seconds: expected a whole number of seconds, at least 60')
      const { inviteFor } = await import('../../local-service/index.js')
      process.stdout.write(`${await inviteFor(dir, options.ttlSeconds)}\n`)
      process.stderr.write(`an invitation for the service in ${dir}: give it to one person, who runs \`cidsync login --invite CODE\`; it makes one account, once\n`)
    }))
  command.command('token')
    .description('issue a session token for the pointer service, as an identity provider would')
    .addHelpText('after', LOCAL_SERVICE_TOKEN_HELP)
    .requiredOption('--user <user>', 'the user the token names (sub)')
    .option('--config <path>', 'config file (for the default --dir)')
    .option('--dir <dir>', 'the local service\'s data (default: the config\'s service.dir)')
    .option('--ttl-seconds <n>', 'how long it is valid (default: 30 days)', int, 30 * 86_400)
    .option('--out <file>', 'write it to FILE, mode 0600 (what `login --session-token-file` and a `session-token` file beside the config need), instead of stdout')
    .action(action(async (options: { user: string, config?: string, dir?: string, ttlSeconds: number, out?: string }) => {
      const dir = options.dir ?? tokenDirFromConfig(options.config)
      // A token is signed with the secret in the service's database: one made here, in a dir no
      // running service reads, would be refused with a 401 that never says why.
      if (!existsSync(join(dir, 'service.sqlite'))) {
        throw new UsageError(`no local service data in ${dir} (no service.sqlite), so no running service would accept a token signed here: ` +
          'pass --dir with the directory the running `cidsync local-service` was started with (it says "data in DIR" at start)')
      }
      const { issueTokenFor } = await import('../../local-service/index.js')
      // Before a token is made: `token > file` made the file with the umask.
      if (options.out === undefined) refuseOpenRedirect('the token', '--out')
      const token = await issueTokenFor(dir, options.user, options.ttlSeconds)
      if (options.out !== undefined) {
        writeFileAtomicSync(options.out, `${token}\n`, { mode: 0o600 })
        process.stderr.write(`wrote the token to ${options.out} (mode 0600); signed with the secret in ${dir}: only the local service serving that directory accepts it\n`)
        return
      }
      process.stdout.write(`${token}\n`)
      process.stderr.write(`signed with the secret in ${dir}: only the local service serving that directory accepts it\n`)
    }))
}
