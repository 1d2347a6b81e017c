import { describe, it, expect } from 'vitest'
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { useTempDir } from '../helpers/temp-dir.js'
import { runCli } from '../helpers/cli.js'
import { httpGet } from '../helpers/http.js'
import { startInProcessDaemon } from '../helpers/in-process-daemon.js'
import { until } from '../helpers/wait.js'

describe('cidsync dashboard', () => {
  it('prints a login link that works once', async () => {
    const dir = await useTempDir()
    const { port, config } = await startInProcessDaemon(dir)
    const result = await runCli(['dashboard', '--config', config])
    expect(result.code).toBe(0)
    const link = new URL(result.stdout.trim())
    expect(link.origin).toBe(`http://127.0.0.1:${port}`)
    expect(result.stderr).toContain('works once')
    const path = `${link.pathname}${link.search}`
    expect((await httpGet({ port }, path)).status).toBe(303)
    expect((await httpGet({ port }, path)).status).toBe(403)
  })

  it('--open hands the link to xdg-open where there is a graphical session', async () => {
    const dir = await useTempDir()
    const { config } = await startInProcessDaemon(dir)
    const bin = join(dir, 'bin')
    await mkdir(bin)
    const opened = join(dir, 'opened')
    // A stand-in for the desktop's opener: it records what it was asked to open.
    await writeFile(join(bin, 'xdg-open'), `#!/bin/sh\nprintf '%s' "$1" > '${opened}'\n`)
    await chmod(join(bin, 'xdg-open'), 0o755)
    const result = await runCli(['dashboard', '--open', '--config', config], { env: { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}`, DISPLAY: ':0' } })
    expect(result.code).toBe(0)
    const url = await until(async () => { try { return await readFile(opened, 'utf8') } catch { return undefined } }, 5_000, 'xdg-open to be run')
    expect(url).toBe(result.stdout.trim())
    const headless = await runCli(['dashboard', '--open', '--config', config], { env: { ...process.env, DISPLAY: '', WAYLAND_DISPLAY: '' } })
    expect(headless.code).toBe(0)
    expect(headless.stderr).toContain('not opened: no graphical session')
  })

  it('refuses, with the fix, when the endpoint is a unix socket', async () => {
    const dir = await useTempDir()
    await writeFile(join(dir, 'config.toml'), `state_dir = "state"\n[status]\nlisten = "unix:${join(dir, 's.sock')}"\n`)
    const result = await runCli(['dashboard', '--config', join(dir, 'config.toml')])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('[ERR_DASHBOARD_UNAVAILABLE]')
  })
})
