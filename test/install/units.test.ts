import { describe, it, expect } from 'vitest'
import { spawnSync } from 'node:child_process'
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises'
import { statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { accessProblem, checkSystemInstall, planInstall, planUninstall, withSystemStateDir } from '../../src/install/index.js'
import { runCli, CLI } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

/** Whether another user may pass through every directory above the temp dir: else the access checks below name that one. */
function tempDirReachable (): boolean {
  for (let dir = tmpdir(); ; dir = dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) return false
    if (dirname(dir) === dir) return true
  }
}

const hasSystemdAnalyze = spawnSync('systemd-analyze', ['--version']).status === 0
const hasPython = spawnSync('python3', ['--version']).status === 0

async function plan (dir: string, platform: 'linux' | 'darwin', user: boolean): Promise<ReturnType<typeof planInstall>> {
  await mkdir(join(dir, 'creds'), { recursive: true })
  await writeFile(join(dir, 'creds', 'api-key'), 'k')
  return planInstall({ platform, user, node: process.execPath, cli: CLI, config: join(dir, 'my config.toml'), folders: [join(dir, 'My Notes'), '/srv/photos'], credentialsDir: join(dir, 'creds'), home: join(dir, 'home') })
}

describe('service files', () => {
  it('fill the system unit with this install\'s paths, folders read-only, credentials that exist', async () => {
    const dir = await useTempDir()
    const { path, content, commands } = await plan(dir, 'linux', false)
    expect(path).toBe('/etc/systemd/system/cidsync.service')
    expect(content).toContain(`ExecStart=${process.execPath} ${CLI} daemon --config "${join(dir, 'my config.toml')}"`)
    expect(content).toContain(`ReadOnlyPaths=-"${join(dir, 'My Notes')}"`)
    expect(content).toContain('ReadOnlyPaths=-/srv/photos')
    expect(content).toContain(`LoadCredential=api-key:${join(dir, 'creds', 'api-key')}`)
    expect(content).not.toContain('session-token')
    expect(content).not.toMatch(/@[A-Z]+@/)
    expect(content).not.toMatch(/^MemoryDenyWriteExecute/m)
    expect(content).toContain('RestartPreventExitStatus=2')
    expect(content).toContain('SystemCallErrorNumber=EPERM')
    expect(content).not.toContain('# cidsync:')
    for (const directive of ['ProtectSystem=strict', 'NoNewPrivileges=yes', 'PrivateTmp=yes', 'ProtectKernelTunables=yes', 'ProtectKernelModules=yes', 'ProtectKernelLogs=yes', 'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6', 'SystemCallFilter=@system-service', 'Restart=on-failure', 'StateDirectory=cidsync', 'CacheDirectory=cidsync', 'ConfigurationDirectory=cidsync', 'RuntimeDirectory=cidsync', 'Type=exec']) {
      expect(content).toContain(directive)
    }
    expect(commands.at(-1)).toEqual(['systemctl', 'enable', '--now', 'cidsync.service'])
  })

  it('name a state dir outside /var/lib/cidsync as writable, and keep the user unit off the system\'s network target', async () => {
    const dir = await useTempDir()
    const system = planInstall({ platform: 'linux', user: false, node: process.execPath, cli: CLI, config: join(dir, 'c.toml'), folders: [], credentialsDir: dir, stateDir: '/srv/cidsync state' })
    expect(system.content).toContain('ReadWritePaths="/srv/cidsync state"')
    const standard = planInstall({ platform: 'linux', user: false, node: process.execPath, cli: CLI, config: join(dir, 'c.toml'), folders: [], credentialsDir: dir, stateDir: '/var/lib/cidsync' })
    expect(standard.content).not.toContain('ReadWritePaths')
    const user = planInstall({ platform: 'linux', user: true, node: process.execPath, cli: CLI, config: join(dir, 'c.toml'), folders: [], credentialsDir: dir, stateDir: join(dir, 's') })
    expect(user.content).not.toContain('network-online.target')
    expect(user.content).toContain('RestartPreventExitStatus=2')
    expect(user.content).not.toContain('ReadWritePaths')
    expect(planUninstall('linux', false).after).toEqual([['systemctl', 'daemon-reload']])
    expect(planUninstall('linux', true).after).toEqual([['systemctl', '--user', 'daemon-reload']])
  })

  it.runIf(hasSystemdAnalyze)('as shipped in systemd/, work when copied: no placeholders, and systemd-analyze verify passes', async () => {
    const dir = await useTempDir()
    for (const name of ['cidsync.service', 'cidsync-user.service']) {
      const text = await readFile(join('systemd', name), 'utf8')
      expect(text).not.toMatch(/@[A-Z]+@/)
      const unit = join(dir, 'cidsync.service')
      // verify wants a user that exists and an ExecStart binary that does: node is where the unit says on Debian.
      await writeFile(unit, text.replace('User=cidsync\nGroup=cidsync\n', '').replace(/ExecStart=\S+/, `ExecStart=${process.execPath}`))
      const result = spawnSync('systemd-analyze', ['verify', '--man=no', unit], { encoding: 'utf8' })
      expect(result.stderr.split('\n').filter(l => l.includes('cidsync.service') && !l.includes('Failed to look up module') && !l.includes('main.js'))).toEqual([])
    }
  })

  it('make a system install name its state dir in the config, once', () => {
    const edited = withSystemStateDir('# mine\nnamespace = "a"\n\n[snapshot]\ndeal = false\n')
    expect(edited).toMatch(/^# Added by `cidsync service install`.*\nstate_dir = "\/var\/lib\/cidsync"\n\n# mine\nnamespace = "a"/)
    expect(withSystemStateDir(edited ?? '')).toBeUndefined()
    expect(withSystemStateDir('state_dir = "/srv/x"\n')).toBeUndefined()
  })

  // A TMPDIR inside a private directory (0700): the service user could reach nothing under it.
  it.skipIf(!tempDirReachable())('say when the service user cannot run node or read cidsync and its config, and warn about folders under /tmp', async () => {
    const dir = await useTempDir()
    const privateDir = join(dir, 'private')
    await chmod(dir, 0o755)
    await mkdir(privateDir)
    await writeFile(join(privateDir, 'c.toml'), '')
    await chmod(privateDir, 0o700)
    const account = { name: 'cidsync', uid: 999_999, gid: 999_999 }
    expect(accessProblem(account, join(privateDir, 'c.toml'))).toContain(`cannot enter ${privateDir}`)
    await chmod(privateDir, 0o755)
    await chmod(join(privateDir, 'c.toml'), 0o600)
    expect(accessProblem(account, join(privateDir, 'c.toml'))).toContain('cannot read')
    expect(accessProblem({ ...account, uid: process.getuid?.() ?? 0 }, join(privateDir, 'c.toml'))).toBeUndefined()
    await chmod(join(privateDir, 'c.toml'), 0o644)
    const checks = checkSystemInstall({ node: process.execPath, cli: join(privateDir, 'c.toml'), config: join(privateDir, 'c.toml'), folders: ['/tmp/notes', '/srv/photos'], account })
    expect(checks.problems).toEqual([])
    expect(checks.warnings).toHaveLength(1)
    expect(checks.warnings[0]).toContain('/tmp/notes')
    expect(checks.warnings[0]).toContain('PrivateTmp')
  })

  it.runIf(hasSystemdAnalyze).each([false, true])('pass systemd-analyze verify (user unit: %s)', async (user) => {
    const dir = await useTempDir()
    const { content } = await plan(dir, 'linux', user)
    // verify wants the unit's own name and a user that exists; the check is of the unit's syntax and directives.
    const unit = join(dir, 'cidsync.service')
    await writeFile(unit, content.replace('User=cidsync\nGroup=cidsync\n', ''))
    const result = spawnSync('systemd-analyze', ['verify', '--man=no', unit], { encoding: 'utf8' })
    expect(result.stderr.split('\n').filter(l => l.includes('cidsync.service') && !l.includes('Failed to look up module'))).toEqual([])
    expect(result.status).toBe(0)
  })

  it.runIf(hasPython)('make a LaunchAgent plist that parses, with the keys launchd needs', async () => {
    const dir = await useTempDir()
    const { path, content, commands } = await plan(dir, 'darwin', true)
    expect(path).toBe(join(dir, 'home', 'Library', 'LaunchAgents', 'com.cidsync.daemon.plist'))
    const parsed = spawnSync('python3', ['-c', 'import json,plistlib,sys; print(json.dumps(plistlib.loads(sys.stdin.buffer.read())))'], { input: content, encoding: 'utf8' })
    expect(parsed.status).toBe(0)
    expect(JSON.parse(parsed.stdout)).toEqual({
      Label: 'com.cidsync.daemon',
      ProgramArguments: [process.execPath, CLI, 'daemon', '--config', join(dir, 'my config.toml')],
      EnvironmentVariables: { CIDSYNC_SUPERVISOR: 'launchd', NODE_OPTIONS: '--max-semi-space-size=1' },
      RunAtLoad: true,
      KeepAlive: { SuccessfulExit: false },
      ProcessType: 'Background',
      ThrottleInterval: 10,
      StandardOutPath: join(dir, 'home', 'Library', 'Logs', 'cidsync.log'),
      StandardErrorPath: join(dir, 'home', 'Library', 'Logs', 'cidsync.log')
    })
    expect(commands[0]?.slice(0, 2)).toEqual(['launchctl', 'bootstrap'])
    expect(planUninstall('darwin', true, join(dir, 'home')).commands[0]?.slice(0, 2)).toEqual(['launchctl', 'bootout'])
  })

  it('are printed, with the commands, by service install --dry-run for both platforms', async () => {
    const dir = await useTempDir()
    await writeFile(join(dir, 'c.toml'), 'state_dir = "s"\n')
    const linux = await runCli(['service', 'install', '--dry-run', '--user', '--platform', 'linux', '--config', join(dir, 'c.toml')])
    expect(linux.code).toBe(0)
    expect(linux.stdout).toContain('# ')
    expect(linux.stdout).toContain('/.config/systemd/user/cidsync.service')
    expect(linux.stdout).toContain('systemctl --user enable --now cidsync.service')
    const mac = await runCli(['service', 'install', '--dry-run', '--platform', 'darwin', '--config', join(dir, 'c.toml')])
    expect(mac.stdout).toContain('<key>Label</key>')
    expect(mac.stdout).toContain('launchctl bootstrap')
    const uninstall = await runCli(['service', 'uninstall', '--dry-run', '--platform', 'linux'])
    expect(uninstall.stdout).toContain('systemctl disable --now cidsync.service')
    expect(uninstall.stdout).toMatch(/rm \/etc\/systemd\/system\/cidsync.service\nsystemctl daemon-reload/)
    const system = await runCli(['service', 'install', '--dry-run', '--platform', 'linux', '--config', join(dir, 'c.toml')])
    expect(system.code).toBe(0)
    expect(system.stdout).not.toContain('gets, first: state_dir')
    expect(system.stdout).toContain(`ReadWritePaths=${join(dir, 's')}`)
    expect((await runCli(['service', 'install', '--dry-run', '--platform', 'win32', '--config', join(dir, 'c.toml')])).code).toBe(2)
  })
})
