import { describe, expect, it } from 'vitest'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { useTempDir } from '../helpers/temp-dir.js'

const STORE = fileURLToPath(new URL('../../dist/local-service/store.js', import.meta.url))

async function openInProcess (dir: string): Promise<{ code: number | null, stderr: string }> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', `const { openServiceDatabase } = await import(${JSON.stringify(STORE)}); openServiceDatabase(${JSON.stringify(dir)}).close()`], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
  const code = await new Promise<number | null>(resolve => child.on('close', resolve))
  return { code, stderr }
}

describe('the local service\'s database', () => {
  it('opens in several processes at once on a fresh directory, each migrating it or waiting for the other', async () => {
    const root = await useTempDir()
    for (let round = 0; round < 4; round++) {
      const dir = join(root, `fresh-${round}`)
      const results = await Promise.all([0, 1, 2, 3].map(async () => await openInProcess(dir)))
      expect(results.map(r => r.stderr.split('\n').find(l => l.includes('Error')) ?? '')).toEqual(['', '', '', ''])
      expect(results.map(r => r.code)).toEqual([0, 0, 0, 0])
    }
  })
})
