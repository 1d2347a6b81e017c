import { describe, expect, it, onTestFinished } from 'vitest'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

describe('cidsync local-service', () => {
  it('on a port another program holds: exit 1 saying so and what to do, with a code, not a bare EADDRINUSE', async () => {
    const dir = await useTempDir()
    const holder = createServer()
    await new Promise<void>(resolve => holder.listen(0, '127.0.0.1', resolve))
    onTestFinished(async () => { await new Promise(resolve => holder.close(resolve)) })
    const port = (holder.address() as { port: number }).port
    const run = await runCli(['local-service', '--dir', join(dir, 'svc'), '--listen', `127.0.0.1:${port}`], { timeoutMs: 30_000 })
    expect(run.code, run.stderr).toBe(1)
    expect(run.stdout).toBe('')
    expect(run.stderr).toContain(`the local service cannot listen on 127.0.0.1:${port} (EADDRINUSE): another program listens there (another \`cidsync local-service\`?): stop it, or give --listen another port [ERR_LISTEN]`)
  })
})
