import { describe, expect, it, onTestFinished } from 'vitest'
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chmod, copyFile, mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { formatWalletKey, newWalletKey, walletAddress } from '../../src/crypto/index.js'
import { startLocalService } from '../../src/local-service/index.js'
import { loadConfig } from '../../src/config/index.js'
import { CLI, runCli, type CliResult } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

/** No credential or passphrase of the person running the tests leaks into the devices. */
function envFor (home: string): NodeJS.ProcessEnv {
  return { ...process.env, HOME: home, CIDSYNC_API_KEY: '', CIDSYNC_SESSION_TOKEN: '', CIDSYNC_WALLET_KEY: '', CIDSYNC_SNAPSHOT_PASSPHRASE: '', CIDSYNC_CONFIG: '', CIDSYNC_STATUS_LISTEN: '127.0.0.1:0' }
}

async function ok (args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  const result = await runCli(args, { env, timeoutMs: 120_000 })
  expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0)
  return result
}

/**
 * Device A, as the docs set it up: a folder that stores its content, a self-hosted service on
 * loopback, `cidsync login` with a new wallet (API key, session token and wallet key kept), and a publish.
 */
async function firstDevice (root: string): Promise<{ url: string, home: string, config: string, env: NodeJS.ProcessEnv, address: string }> {
  const local = await startLocalService({ dir: join(root, 'service') })
  onTestFinished(async () => { await local.stop() })
  const url = local.url
  const home = join(root, 'home-a')
  await mkdir(join(home, 'notes', 'sub'), { recursive: true })
  await writeFile(join(home, 'notes', 'todo.md'), '- buy milk\n')
  await writeFile(join(home, 'notes', 'sub', 'plan.txt'), 'the plan, in full\n'.repeat(100))
  const config = join(root, 'a', 'config.toml')
  await mkdir(join(root, 'a'))
  await writeFile(config, `state_dir = "state"\n[[folders]]\nname = "notes"\npath = "${join(home, 'notes')}"\nstore = true\n[status]\nlisten = "127.0.0.1:0"\n` +
    `[service]\nmode = "remote"\ndeal_url = "${url}"\napi_url = "${url}"\npointer_url = "${url}"\nupload_url = "${url}"\ngateways = ["${url}"]\n[snapshot]\ndeal = false\n`)
  const env = envFor(home)
  const wallet = newWalletKey()
  const walletFile = join(root, 'a', 'wallet.key')
  await writeFile(walletFile, formatWalletKey(wallet), { mode: 0o600 })
  await ok(['login', '--config', config, '--wallet-key-file', walletFile], env)
  await ok(['snapshot', '--config', config], env)
  return { url, home, config, env, address: walletAddress(wallet).toLowerCase() }
}

describe('a second device on a self-hosted service, one command each side', () => {
  it('key export --bundle on A, init --join on B: B restores A\'s files', async () => {
    const root = await useTempDir()
    const a = await firstDevice(root)
    const bundle = join(a.home, 'join')
    const exported = await ok(['key', 'export', '--bundle', bundle, '--config', a.config], a.env)
    // Nothing of it on the terminal; the file private from its creation; its head says what it grants.
    expect(exported.stdout).toBe('')
    expect(exported.stderr).toContain(`wrote the join file ${bundle} (mode 0600). Whoever holds it gets:`)
    expect(exported.stderr).toContain('the service URLs name this machine')
    expect((await stat(bundle)).mode & 0o777).toBe(0o600)
    const text = await readFile(bundle, 'utf8')
    expect(text).toMatch(/^# cidsync join file: another device becomes this account with it\.\n# On that device run: cidsync init --join THIS-FILE\n# Whoever holds this file gets:\n/)
    expect(text).toContain(`#   - the wallet key of ${a.address}: sign in as this account`)
    expect(text).toContain('#   - the snapshot key: read every snapshot and every stored file of this account')
    expect(text).toMatch(/# {3}- a session token valid until \S+: move this account's pointer/)

    // Carried to B (its own home, config and state dir), which joins with one command.
    const homeB = join(root, 'home-b')
    await mkdir(homeB)
    const carried = join(homeB, 'join')
    await copyFile(bundle, carried)
    const env = envFor(homeB)
    const config = join(root, 'b', 'config.toml')
    const joined = await ok(['init', '--join', carried, '--config', config, '--state-dir', join(root, 'b', 'state')], env)
    expect(joined.stdout).toContain(`made folder notes at ${join(homeB, 'notes')}`)
    // What the join file set is said: the service it points at (loopback here: no plain-http warning).
    expect(joined.stdout).toContain(`service ${a.url} (from the join file)`)
    expect(joined.stderr).not.toContain('plain http')
    expect(joined.stdout).toContain(`account ${a.address}: saved ${join(root, 'b', 'wallet-key')}, ${join(root, 'b', 'api-key')}, ${join(root, 'b', 'session-token')} (0600)`)
    expect(joined.stdout).toContain('cidsync restore --files')
    // The folders were just made: the next steps do not ask for them.
    expect(joined.stdout).not.toContain('create the folders first')
    expect(joined.stderr).toContain(`delete ${carried} now`)
    for (const name of ['wallet-key', 'api-key', 'session-token']) expect((await stat(join(root, 'b', name))).mode & 0o777).toBe(0o600)
    expect(await readFile(config, 'utf8')).toContain(`pointer_url = "${a.url}"`)

    await ok(['restore', '--config', config], env)
    await ok(['restore', '--files', '--config', config], env)
    expect(await readFile(join(homeB, 'notes', 'todo.md'), 'utf8')).toBe('- buy milk\n')
    expect(await readFile(join(homeB, 'notes', 'sub', 'plan.txt'), 'utf8')).toBe('the plan, in full\n'.repeat(100))
    // B publishes as the same account, on top of A's publish.
    await writeFile(join(homeB, 'notes', 'from-b.md'), 'b')
    await ok(['snapshot', '--config', config], env)
    await ok(['restore', '--force', '--config', a.config], a.env)
    expect((await ok(['ls', '--all-devices', '--config', a.config], a.env)).stdout).toContain('notes/from-b.md')
  }, 300_000)

  it('never writes the join file over another, nor to a terminal or a file others may read, and refuses an embedded service', async () => {
    const root = await useTempDir()
    const a = await firstDevice(root)
    const taken = join(root, 'taken')
    await writeFile(taken, 'mine\n')
    const over = await runCli(['key', 'export', '--bundle', taken, '--config', a.config], { env: a.env })
    expect(over.code).toBe(2)
    expect(over.stderr).toContain(`${taken} exists: give a new file name`)
    expect(await readFile(taken, 'utf8')).toBe('mine\n')
    // `--bundle - > file` under umask 022: the shell made the file 0644 before cidsync ran.
    const redirected = join(root, 'redirected')
    const child = spawn('/bin/sh', ['-c', 'umask 022; exec "$0" "$1" key export --bundle - --config "$2" > "$3"', process.execPath, CLI, a.config, redirected], { stdio: ['ignore', 'ignore', 'pipe'], env: a.env })
    let stderr = ''
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
    const code = await new Promise(resolve => child.on('close', resolve))
    expect(code, stderr).toBe(2)
    expect(stderr).toContain('standard output is a file others may read (mode 644)')
    expect(await readFile(redirected, 'utf8')).toBe('')
    // Into a pipe it goes, for `| ssh other cidsync init --join -`.
    const piped = await ok(['key', 'export', '--bundle', '-', '--config', a.config], a.env)
    expect(piped.stdout).toContain('"format": "cidsync-join/1"')

    const embedded = join(root, 'embedded.toml')
    await writeFile(embedded, 'state_dir = "e-state"\n')
    const refused = await runCli(['key', 'export', '--bundle', join(root, 'e-join'), '--config', embedded], { env: a.env })
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain('another device cannot reach it')
    expect(existsSync(join(root, 'e-join'))).toBe(false)
  }, 300_000)

  it('an embedded service on a folder both devices mount: the join file carries its dir and the key, no credentials', async () => {
    const root = await useTempDir()
    const home = join(root, 'home-a')
    await mkdir(join(home, 'notes'), { recursive: true })
    await writeFile(join(home, 'notes', 'shared.md'), 'on the NAS\n')
    const config = join(root, 'a.toml')
    await writeFile(config, `state_dir = "a-state"\n[[folders]]\nname = "notes"\npath = "${join(home, 'notes')}"\nstore = true\n[service]\ndir = "${join(root, 'nas')}"\n[snapshot]\ndeal = false\n` +
      `[[mirrors]]\nname = "usb"\npath = "${join(root, 'usb')}"\n`)
    const env = envFor(home)
    await ok(['snapshot', '--config', config], env)
    const bundle = join(root, 'join')
    const exported = await ok(['key', 'export', '--bundle', bundle, '--config', config], env)
    // A USB disk's path is this device's own: the join file leaves mirrors out, and says so.
    expect(exported.stderr).toContain('the join file carries no [[mirrors]] table (usb): add them to the other device\'s config')
    const text = await readFile(bundle, 'utf8')
    expect(text).toContain(`nothing of the service itself: its account is in ${join(root, 'nas')}`)
    expect(text).not.toContain('wallet key')
    const homeB = join(root, 'home-b')
    const envB = envFor(homeB)
    const configB = join(root, 'b', 'config.toml')
    await ok(['init', '--join', bundle, '--config', configB, '--state-dir', join(root, 'b-state')], envB)
    await ok(['restore', '--config', configB], envB)
    await ok(['restore', '--files', '--config', configB], envB)
    expect(await readFile(join(homeB, 'notes', 'shared.md'), 'utf8')).toBe('on the NAS\n')
    // The join file named the account: the NAS not mounted is refused on b, and nothing is made in the empty mount point.
    await rename(join(root, 'nas'), join(root, 'nas.off'))
    const unmounted = await runCli(['restore', '--files', '--config', configB], { env: envB, timeoutMs: 120_000 })
    expect(unmounted.code, unmounted.stderr).toBe(2)
    expect(unmounted.stderr).toContain('[ERR_EMBEDDED_ACCOUNT_CHANGED]')
    expect(existsSync(join(root, 'nas'))).toBe(false)
  }, 300_000)

  it('the join file carries [retention]: the other device forgets by the same policy, or keeps everything as this one does', async () => {
    const root = await useTempDir()
    const env = envFor(root)
    const base = `[[folders]]\nname = "notes"\npath = "${join(root, 'notes')}"\n[service]\ndir = "${join(root, 'nas')}"\n[snapshot]\ndeal = false\n`
    const joinAs = async (name: string, text: string): Promise<{ config: string, joined: CliResult, bundle: string }> => {
      const config = join(root, `${name}-a.toml`)
      await writeFile(config, `state_dir = "${name}-a-state"\n${base}${text}`)
      const bundle = join(root, `${name}-join`)
      await ok(['key', 'export', '--bundle', bundle, '--config', config], env)
      const configB = join(root, `${name}-b.toml`)
      return { config: configB, joined: await ok(['init', '--join', bundle, '--config', configB, '--state-dir', join(root, `${name}-b-state`)], env), bundle }
    }
    const policy = '[retention]\nkeep_daily = 30\nkeep_within = "7d"\nprune_margin = "2h"\nschedule = "0 3 * * *"\ntime_zone = "Europe/Berlin"\n'
    const same = await joinAs('same', policy)
    const b = loadConfig({ configPath: same.config, env: {} })
    expect(b.retention).toEqual(loadConfig({ configPath: join(root, 'same-a.toml'), env: {} }).retention)
    expect(b.retention?.timeZone).toBe('Europe/Berlin')
    // Whose policy it is, and when it runs: the other device's schedule, not the template's weekly one.
    expect(same.joined.stdout).toContain(`the other device's retention policy written under [retention] in ${same.config}: the daemon forgets and prunes by it on its schedule "0 3 * * *"`)
    // A margin under the default is written as said, and said: a prune there may race other devices.
    expect(same.joined.stderr).toContain('the join file sets [retention] prune_margin = "2h", under the default "1d"')
    expect((await joinAs('day', '[retention]\nkeep_daily = 3\n')).joined.stderr).not.toContain('prune_margin')

    // None there: none here, so this device never forgets what the other keeps.
    const none = await joinAs('none', '')
    expect(loadConfig({ configPath: none.config, env: {} }).retention).toBeUndefined()
    expect(none.joined.stdout).not.toContain('retention policy written')
    expect(none.joined.stdout).toContain(`no [retention] in ${none.config}, as on the other device: every publish is kept`)

    // A join file made before it carried the policy: the default, said as a warning.
    const text = await readFile(same.bundle, 'utf8')
    const older = join(root, 'older-join')
    await writeFile(older, text.replace(/"retention": \{[^}]*\},\n\s*/, ''), { mode: 0o600 })
    expect(await readFile(older, 'utf8')).not.toContain('"retention"')
    const olderB = await ok(['init', '--join', older, '--config', join(root, 'older-b.toml'), '--state-dir', join(root, 'older-b-state')], env)
    expect(olderB.stderr).toContain('the join file does not say the other device\'s [retention]')
    expect(loadConfig({ configPath: join(root, 'older-b.toml'), env: {} }).retention?.policy.keepDaily).toBe(14)

    // A policy no config accepts (it keeps nothing) is refused, and nothing is written.
    const bad = join(root, 'bad-join')
    await writeFile(bad, text.replace('"keep_daily": 30', '"keep_daily": 0').replace('"keep_within": "7d"', '"keep_within": "0s"'), { mode: 0o600 })
    const refused = await runCli(['init', '--join', bad, '--config', join(root, 'bad-b.toml')], { env })
    expect(refused.code, refused.stderr).toBe(2)
    expect(refused.stderr).toContain('retention: is not a [retention] a config accepts')
    expect(existsSync(join(root, 'bad-b.toml'))).toBe(false)
  }, 300_000)

  it('init --join refuses a join file others may read, or one that is damaged, and writes nothing', async () => {
    const root = await useTempDir()
    const env = envFor(root)
    const file = join(root, 'join')
    await writeFile(file, '# cidsync join file\n{"format": "cidsync-join/1", "grants": []}\n', { mode: 0o600 })
    const config = join(root, 'b', 'config.toml')
    const damaged = await runCli(['init', '--join', file, '--config', config], { env })
    expect(damaged.code).toBe(2)
    expect(damaged.stderr).toContain(`${file} is damaged`)
    expect(damaged.stderr).toContain('[ERR_BUNDLE_INVALID]')
    await chmod(file, 0o644)
    const loose = await runCli(['init', '--join', file, '--config', config], { env })
    expect(loose.code).toBe(2)
    expect(loose.stderr).toContain(`run \`chmod 600 ${file}\``)
    await writeFile(join(root, 'other'), 'not json', { mode: 0o600 })
    expect((await runCli(['init', '--join', join(root, 'other'), '--config', config], { env })).stderr).toContain('is not a cidsync join file')
    expect(existsSync(config)).toBe(false)
  })
})
