import { describe, it, expect } from 'vitest'
import { join } from 'node:path'
import { loadConfig } from '../../src/config/index.js'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

describe('cidsync init', () => {
  it('warns that a state dir inside a watched folder is left out of it', async () => {
    const dir = await useTempDir()
    const config = join(dir, 'config.toml')
    const home = join(dir, 'home')
    const init = await runCli(['init', '--config', config, '--folder', home, '--state-dir', join(home, '.local', 'state', 'cidsync')])
    expect(init.code).toBe(0)
    expect(init.stderr).toContain(`cidsync: warning: the state dir ${join(home, '.local', 'state', 'cidsync')} lies inside the watched folder home (${home}): it is left out of the folder, never indexed`)
    expect(loadConfig({ configPath: config, env: {} }).folders[0]?.exclude?.map(e => e.path)).toEqual(['.local/state/cidsync'])
  })
})
