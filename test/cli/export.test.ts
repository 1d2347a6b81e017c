import { describe, expect, it } from 'vitest'
import { existsSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

describe('cidsync export --car -', () => {
  it('is a usage error (exit 2) saying the CAR goes to a file, and leaves no file named - behind', async () => {
    const dir = await useTempDir()
    const config = join(dir, 'c.toml')
    await writeFile(config, 'state_dir = "state"\n[status]\nlisten = "127.0.0.1:0"\n')
    const dash = await runCli(['export', '--car', '-', '--config', config], { cwd: dir })
    expect(dash.code, dash.stderr).toBe(2)
    expect(dash.stderr).toContain('--car -: the CAR is written to a file, not to standard output (through a temp file, so FILE is whole or untouched): give a path (./- for a file named -) [ERR_USAGE]')
    expect(dash.stdout).toBe('')
    expect(existsSync(join(dir, '-'))).toBe(false)
  })
})
