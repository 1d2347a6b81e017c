import { describe, expect, it } from 'vitest'
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL } from '../helpers/service.js'
import { CLI } from '../helpers/cli.js'
import { within } from '../helpers/wait.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { ok, writeSomeFiles } from '../cli/content-devices.js'
import { exitDevice, freshService } from './exit-devices.js'

describe.skipIf(EXTERNAL)('export --car to a FILE that cannot be written', () => {
  it('a FILE in a directory that does not exist, under /proc, or that is a directory: named with what to do (ERR_EXPORT_WRITE, exit 1), never a silent exit', async () => {
    const root = await useTempDir()
    const one = await freshService(root, 'one')
    const a = await exitDevice(root, one, 'a')
    await writeSomeFiles(a.folder, 'd', { largeBytes: 10 * 1024, small: 3 })
    await ok(a, ['snapshot'])
    await mkdir(join(root, 'adir'))
    for (const file of [join(root, 'nodir', 'x.car'), '/proc/self/x.car', join(root, 'adir')]) {
      const run = await a.run(['export', '--car', file])
      expect(run.code, `${file}: ${run.stderr}`).toBe(1)
      expect(run.stderr).toContain('[ERR_EXPORT_WRITE]')
      expect(run.stderr).toContain(file)
    }
    expect(existsSync(join(root, 'nodir'))).toBe(false)
    expect((await readdir(root)).filter(n => n.includes('cidsync-export'))).toEqual([])
  }, 300_000)

  it('a write that fails midway (a file size limit, as a full disk does): ERR_EXPORT_WRITE, exit 1, FILE untouched, never a hang or a silent exit', async () => {
    const root = await useTempDir()
    const one = await freshService(root, 'one')
    const a = await exitDevice(root, one, 'a')
    await writeSomeFiles(a.folder, 'd', { largeBytes: 3 * 1024 * 1024 + 1, small: 5 })
    await ok(a, ['snapshot'])
    const car = join(root, 'out.car')
    // 1 MiB a file at most: the state dir's files stay under it, the CAR of 3 MiB of content does not.
    const child = spawn('bash', ['-c', 'ulimit -f 1024; exec "$0" "$@"', process.execPath, CLI, 'export', '--car', car, '--content', '--config', a.config], { env: a.env, stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (b: Buffer) => { stderr += b.toString() })
    const code = await within(new Promise<number | null>(resolve => child.on('close', resolve)), 120_000, 'the export to end')
    expect(code, stderr).toBe(1)
    expect(stderr).toContain('[ERR_EXPORT_WRITE]')
    expect(stderr).toContain('EFBIG')
    expect(existsSync(car)).toBe(false)
    expect((await readdir(root)).filter(n => n.includes('cidsync-export'))).toEqual([])
  }, 300_000)
})
