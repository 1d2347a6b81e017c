import { describe, it, expect } from 'vitest'
import { spawnSync } from 'node:child_process'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { planInstall, planUninstall } from '../../src/install/index.js'
import { runCli, CLI } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

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
    for (const directive of ['ProtectSystem=strict', 'NoNewPrivileges=yes', 'PrivateTmp=yes', 'ProtectKernelTunables=yes', 'ProtectKernelModules=yes', 'ProtectKernelLogs=yes', 'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6', 'SystemCallFilter=@system-service', 'Restart=on-failure', 'StateDirectory=cidsync', 'ConfigurationDirectory=cidsync', 'RuntimeDirectory=cidsync', 'Type=exec']) {
      expect(content).toContain(directive)
    }
    expect(commands.at(-1)).toEqual(['systemctl', 'enable', '--now', 'cidsync.service'])
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
    expect((await runCli(['service', 'uninstall', '--dry-run', '--platform', 'linux'])).stdout).toContain('systemctl disable --now cidsync.service')
    expect((await runCli(['service', 'install', '--dry-run', '--platform', 'win32', '--config', join(dir, 'c.toml')])).code).toBe(2)
  })
})
