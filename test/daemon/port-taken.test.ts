import { describe, expect, it } from 'vitest'
import { createServer } from 'node:net'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { DaemonProcess } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { within } from '../helpers/wait.js'
import { writeTestConfig } from '../helpers/config-file.js'

async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  await new Promise(resolve => server.close(resolve))
  return port
}

describe('two configs on one status port (the quick start and init both default to 7345)', () => {
  it('the second daemon says the port is another cidsync\'s, whose, and what to set; no "daemon stopped" for one that never started', async () => {
    const dir = await useTempDir()
    const port = await freePort()
    const configs: string[] = []
    for (const name of ['a', 'b']) {
      await mkdir(join(dir, name, 'notes'), { recursive: true })
      const path = await writeTestConfig(dir, { state_dir: `${name}/state`, folders: [{ name: 'notes', path: `${name}/notes` }], status: { listen: `127.0.0.1:${port}` }, watch: { settle_ms: undefined } }, `${name}.toml`)
      configs.push(path)
    }
    const first = new DaemonProcess(['--config', configs[0] as string])
    await first.logged('daemon started')
    const second = new DaemonProcess(['--config', configs[1] as string])
    const exited = await within(new Promise<number | null>(resolve => second.child.on('close', code => resolve(code))), 20_000, 'the second daemon to exit')
    expect(exited).toBe(1)
    expect(second.stderr).toContain(`cannot listen on 127.0.0.1:${port}: another cidsync daemon listens there (pid ${first.child.pid ?? ''}, state dir ${join(dir, 'a', 'state')})`)
    expect(second.stderr).toContain('[status] listen = "127.0.0.1:0"')
    expect(second.stderr).toContain('[ERR_LISTEN]')
    expect(second.stderr).not.toContain('daemon stopped')
    await first.stop()
  }, 60_000)
})
