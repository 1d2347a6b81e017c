import { describe, expect, it } from 'vitest'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

describe('cidsync --help', () => {
  it('groups the commands in the order a user needs them, and names the exit codes and the docs', async () => {
    const help = await runCli(['--help'])
    expect(help.code).toBe(0)
    const out = help.stdout
    const at = (text: string): number => {
      const i = out.indexOf(text)
      expect(i, text).toBeGreaterThan(-1)
      return i
    }
    const headings = ['Set up:', 'Day to day:', 'Restore and check:', 'The service by hand:', 'Help:', 'Exit codes:']
    expect(headings.map(at)).toEqual(headings.map(at).toSorted((a, b) => a - b))
    // init comes first; status leads the day-to-day commands; restore is not lost among the service's.
    expect(at('\n  init ')).toBeLessThan(at('\n  daemon '))
    expect(at('Day to day:\n  status ')).toBeGreaterThan(-1)
    expect(at('\n  restore ')).toBeLessThan(at('\n  files '))
    for (const code of ['0  ok', '1  failure', '2  usage or config error', '3  nothing found', '4  integrity failure']) expect(out).toContain(code)
    expect(out).toMatch(/Docs: README\.md .*docs\/operations\.md/s)
  })

  it('says restore installs the list of files, and which option brings the files themselves back', async () => {
    const help = await runCli(['--help'])
    const restore = help.stdout.slice(help.stdout.indexOf('\n  restore '), help.stdout.indexOf('\n  verify '))
    expect(restore.replace(/\s+/g, ' ')).toContain('It lists the files; --files brings the files themselves back, where their content is stored')
  })

  it('status --check names every problem it exits 1 for, mirrors included, as the README does', async () => {
    const help = await runCli(['status', '--help'])
    const shown = help.stdout.replace(/\s+/g, ' ')
    expect(shown).toContain('A problem is a folder, the service or publishing in error, or uploads failing for over an hour.')
    expect(shown).toContain('when a mirror lags past its max_lag_seconds, has its pointer found ahead or failed its drill')
  })

  it('--config before the command is the command\'s, as `restic -r R snapshots` reads; its own wins; one reading no config says so', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'))
    const config = join(dir, 'c.toml')
    await writeFile(config, `state_dir = "${join(dir, 'state')}"\n[[folders]]\nname = "notes"\npath = "${join(dir, 'notes')}"\n`)
    const env = { ...process.env, CIDSYNC_CONFIG: join(dir, 'missing.toml') }
    const before = await runCli(['--config', config, 'history', '--json'], { env })
    expect(before.stderr).not.toContain('missing.toml')
    expect(before.stderr).not.toContain('unknown option')
    const equals = await runCli([`--config=${config}`, 'history', '--json'], { env })
    expect(equals.stderr).toBe(before.stderr)
    // The command's own --config is the one read.
    const own = await runCli(['--config', join(dir, 'other.toml'), 'history', '--json', '--config', config], { env })
    expect(own.stderr).toBe(before.stderr)
    const none = await runCli(['--config', config, 'generate', '--markdown-dir', join(dir, 'md')], { env })
    expect(none.code).toBe(2)
    expect(none.stderr).toContain('`cidsync generate` reads no config file; leave --config out')
  })
})
