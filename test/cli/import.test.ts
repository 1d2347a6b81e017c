import { describe, expect, it } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

describe('cidsync import --car, a FILE that is not there', () => {
  it('is a usage error (exit 2) naming it, not an integrity failure (exit 4) of a CAR', async () => {
    const dir = await useTempDir()
    const config = join(dir, 'c.toml')
    await writeFile(config, 'state_dir = "state"\n[status]\nlisten = "127.0.0.1:0"\n')
    const missing = await runCli(['import', '--car', join(dir, 'nope.car'), '--config', config])
    expect(missing.code, missing.stderr).toBe(2)
    expect(missing.stderr).toContain(`${join(dir, 'nope.car')}: no such file: give the CAR file \`cidsync export --car FILE\` wrote [ERR_USAGE]`)
    const folder = await runCli(['import', '--car', dir, '--config', config])
    expect(folder.code, folder.stderr).toBe(2)
    expect(folder.stderr).toContain(`${dir} is not a file`)
    // A file that is there but no CAR is still the CAR's failure.
    await writeFile(join(dir, 'g.car'), 'garbage')
    const garbage = await runCli(['import', '--car', join(dir, 'g.car'), '--config', config])
    expect(garbage.code).toBe(4)
    expect(garbage.stderr).toContain('[ERR_CAR_FORMAT]')
  })

  it('refuses --car - (standard input is not read), even beside a file named -', async () => {
    const dir = await useTempDir()
    const config = join(dir, 'c.toml')
    await writeFile(config, 'state_dir = "state"\n[status]\nlisten = "127.0.0.1:0"\n')
    await writeFile(join(dir, '-'), 'garbage')
    const dash = await runCli(['import', '--car', '-', '--config', config], { cwd: dir })
    expect(dash.code, dash.stderr).toBe(2)
    expect(dash.stderr).toContain('--car -: the CAR is read from a file, not from standard input: give its path (./- for a file named -) [ERR_USAGE]')
  })
})
