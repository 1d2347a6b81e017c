import { describe, expect, it } from 'vitest'
import { chown, mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

const isRoot = process.getuid?.() === 0

describe.runIf(isRoot)('a state dir that belongs to another user', () => {
  it('is refused with the sudo -u to run, before anything is read or written there', async () => {
    const dir = await useTempDir()
    const state = join(dir, 'state')
    await mkdir(state, { mode: 0o700 })
    await chown(state, 65534, 65534)
    const config = join(dir, 'c.toml')
    await writeFile(config, `state_dir = ${JSON.stringify(state)}\n`)
    for (const args of [['ls'], ['key', 'export'], ['snapshot']]) {
      const result = await runCli([...args, '--config', config])
      expect(result.code, args.join(' ')).toBe(2)
      expect(result.stderr).toContain(`the state dir ${state} belongs to user nobody`)
      expect(result.stderr).toContain('sudo -u nobody cidsync')
      expect(result.stderr).toContain('[ERR_STATE_DIR_OWNER]')
    }
    // Commands that do not use the state are not in the way.
    expect((await runCli(['service', 'install', '--dry-run', '--user', '--platform', 'linux', '--config', config])).code).toBe(0)
  })
})
