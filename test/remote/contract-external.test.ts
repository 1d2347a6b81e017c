import { describe, it, expect } from 'vitest'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { CLI, runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { formatWalletKey, newWalletKey, walletAddress } from '../../src/crypto/index.js'
import { EXTERNAL } from '../helpers/service.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

// The contract tests run against whatever CIDSYNC_CONTRACT_* names: here, a local service in its
// own process, reached only through those variables, as production would be.
describe.skipIf(EXTERNAL)('the contract tests, pointed by environment variables', () => {
  it('pass against a service they reach only by URL and credentials', async () => {
    const dir = await useTempDir()
    const service = spawn(process.execPath, [CLI, 'local-service', '--dir', join(dir, 'service'), '--deal-delay-ms', '100'], { stdio: ['ignore', 'pipe', 'ignore'] })
    try {
      const url = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no URL')), 15_000)
        service.stdout.once('data', (d: Buffer) => { clearTimeout(timer); resolve(d.toString().trim()) })
      })
      const walletKey = newWalletKey()
      const token = (await runCli(['local-service', 'token', '--user', walletAddress(walletKey), '--dir', join(dir, 'service')])).stdout.trim()
      const env = {
        ...process.env,
        CIDSYNC_CONTRACT_DEAL_URL: url, CIDSYNC_CONTRACT_API_URL: url, CIDSYNC_CONTRACT_POINTER_URL: url,
        CIDSYNC_CONTRACT_UPLOAD_URL: url, CIDSYNC_CONTRACT_GATEWAYS: url,
        CIDSYNC_CONTRACT_WALLET_KEY: formatWalletKey(walletKey), CIDSYNC_CONTRACT_SESSION_TOKEN: token
      }
      const run = spawn(process.execPath, [join(ROOT, 'node_modules', 'vitest', 'vitest.mjs'), 'run', 'test/remote/contract.test.ts', '--reporter=json'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
      let out = ''
      run.stdout.on('data', (d: Buffer) => { out += d.toString() })
      const code = await new Promise<number | null>((resolve) => {
        const timer = setTimeout(() => run.kill('SIGKILL'), 90_000)
        run.on('close', c => { clearTimeout(timer); resolve(c) })
      })
      const report = JSON.parse(out.slice(out.indexOf('{'))) as { numPassedTests: number, numFailedTests: number, numPendingTests: number }
      expect(code).toBe(0)
      expect(report.numFailedTests).toBe(0)
      expect(report.numPassedTests).toBeGreaterThanOrEqual(9)
      expect(report.numPendingTests).toBeGreaterThanOrEqual(1)
    } finally {
      service.kill('SIGTERM')
    }
  })
})
