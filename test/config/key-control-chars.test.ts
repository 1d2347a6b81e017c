import { describe, expect, it } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

// A quoted TOML key may hold any character: printed raw, a newline in it would start a line of the
// config's own choosing. Keys are shown as TOML writes them, quoted with escapes where needed.
describe('a config error naming a key with a newline in it (config/issues.ts)', () => {
  it('says it on one line, the key quoted with its escapes, exit 2', async () => {
    const dir = await useTempDir()
    const config = join(dir, 'config.toml')
    await writeFile(config, 'state_dir = "state"\n[content]\n"a\\n  content.upload_rate = 5: fine" = 1\n')
    const run = await runCli(['status', '--config', config])
    expect(run.code).toBe(2)
    const lines = run.stderr.trimEnd().split('\n')
    expect(lines).toHaveLength(2)
    expect(lines[0]).toBe('cidsync: invalid config:')
    expect(lines[1]).toContain('unknown key content."a\\n  content.upload_rate = 5: fine"')
  })
})
