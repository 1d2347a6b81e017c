import { describe, expect, it } from 'vitest'
import { createServer } from 'node:net'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

/** A loopback port nothing listens on (taken, then let go). */
async function closedPort (): Promise<number> {
  const server = createServer()
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  await new Promise(resolve => server.close(resolve))
  return port
}

describe('how a command reports its failure', () => {
  it('a service that does not answer at all: what to do follows the bare "no answer (ECONNREFUSED)"', async () => {
    const dir = await useTempDir()
    const url = `http://127.0.0.1:${await closedPort()}`
    const config = join(dir, 'c.toml')
    await writeFile(config, `state_dir = "state"\n[service]\nmode = "remote"\ndeal_url = "${url}"\napi_url = "${url}"\npointer_url = "${url}"\nupload_url = "${url}"\ngateways = ["${url}"]\n`)
    const run = await runCli(['pointer', 'get', '--config', config], { env: { ...process.env, CIDSYNC_SESSION_TOKEN: 'a.b.c' }, timeoutMs: 60_000 })
    expect(run.code).toBe(1)
    expect(run.stderr).toContain(`pointer service: GET ${url}/v1/pointers/current?namespace=default&network=mainnet: no answer (ECONNREFUSED): nothing answers at that address: check that the service runs there and that this machine reaches it`)
    expect(run.stderr).toContain('[ERR_REMOTE_NETWORK]')
  })
})
