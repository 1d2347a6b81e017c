import { describe, expect, it } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

describe('a credential file readable by others', () => {
  it('is the credential error with the chmod to run, not "no answer" from the network', async () => {
    const dir = await useTempDir()
    const config = join(dir, 'c.toml')
    // Nothing listens on these: the command must stop at the credential, before any request.
    await writeFile(config, `state_dir = "state"\n[service]\nmode = "remote"\ndeal_url = "http://127.0.0.1:9"\napi_url = "http://127.0.0.1:9"\npointer_url = "http://127.0.0.1:9"\nupload_url = "http://127.0.0.1:9"\ngateways = ["http://127.0.0.1:9"]\n`)
    await writeFile(join(dir, 'api-key'), 'secret-key\n', { mode: 0o644 })
    const env = { ...process.env, CIDSYNC_API_KEY: '' }
    const result = await runCli(['files', '--config', config], { env })
    expect(result.stderr).not.toContain('no answer')
    expect(result.stderr).toContain(`${join(dir, 'api-key')} is readable by others (mode 644): run \`chmod 600 ${join(dir, 'api-key')}\``)
    expect(result.code).toBe(2)
  })
})
