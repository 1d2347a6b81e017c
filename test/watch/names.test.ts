import { describe, it, expect } from 'vitest'
import { mkdir, writeFile, rename } from 'node:fs/promises'
import { join } from 'node:path'
import { DaemonProcess, runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'
import { startWatching, livePaths, type Harness } from './harness.js'
import { printableName } from '../../src/watch/file-name.js'
import { writeTestConfig } from '../helpers/config-file.js'

/** `dir/<name bytes>` as a path Node passes to the kernel byte for byte. */
const bytesPath = (dir: string, ...name: Array<string | number[]>): Buffer =>
  Buffer.concat([Buffer.from(`${dir}/`), ...name.map(part => typeof part === 'string' ? Buffer.from(part) : Buffer.from(part))])

const NOT_UTF8 = 'ERR_NAME_NOT_UTF8'

const skippedOf = (h: Harness): unknown => h.watcher.status().folders[0]?.skippedFiles

describe('names that are not UTF-8', () => {
  it('prints them losslessly: valid UTF-8 as itself, other bytes as \\xHH, a backslash doubled', () => {
    expect(printableName(Buffer.from([0x61, 0xff, 0x2e, 0x74]))).toBe('a\\xff.t')
    expect(printableName(Buffer.concat([Buffer.from('é\\'), Buffer.from([0xc3]), Buffer.from('x')]))).toBe('é\\\\\\xc3x')
  })

  it('are counted and shown with path and reason, at start and live, never dropped silently', async () => {
    const dir = await useTempDir()
    const root = join(dir, 'notes')
    await mkdir(join(root, 'sub'), { recursive: true })
    await writeFile(join(root, 'fine-é.md'), 'fine')
    await writeFile(bytesPath(root, 'latin1-', [0xe9], '.md'), 'x')
    await writeFile(bytesPath(root, 'sub/', [0xff, 0xfe]), 'y')
    const h = await startWatching(dir)
    expect(livePaths(h)).toEqual(['fine-é.md'])
    expect(h.watcher.status().folders[0]?.skipped).toBe(2)
    expect(skippedOf(h)).toEqual(expect.arrayContaining([
      expect.objectContaining({ path: 'latin1-\\xe9.md', reason: NOT_UTF8, nextRetryAt: null }),
      expect.objectContaining({ path: 'sub/\\xff\\xfe', reason: NOT_UTF8, nextRetryAt: null })
    ]))

    await writeFile(bytesPath(root, 'live-', [0x80]), 'z')
    await until(() => h.watcher.status().folders[0]?.skipped === 3 ? true : undefined, 10_000, 'the live one to be counted')
    expect(skippedOf(h)).toContainEqual(expect.objectContaining({ path: 'live-\\x80', reason: NOT_UTF8 }))

    // Renamed to a name that is UTF-8: indexed, and no longer listed.
    await rename(bytesPath(root, 'live-', [0x80]), join(root, 'live.md'))
    await until(async () => {
      await h.watcher.current()
      return livePaths(h).includes('live.md') && h.watcher.status().folders[0]?.skipped === 2 ? true : undefined
    }, 10_000, 'live.md indexed and 2 skipped').catch((err: Error) => { throw new Error(`${err.message}; skipped: ${JSON.stringify(skippedOf(h))}`) })
  })

  it('are in the daemon\'s status document', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'))
    await writeFile(bytesPath(join(dir, 'notes'), [0xff]), 'x')
    await writeFile(join(dir, 'notes', 'ok.md'), 'ok')
    const config = await writeTestConfig(dir, { watch: { settle_ms: undefined } })
    const daemon = new DaemonProcess(['--config', config])
    expect(await daemon.logged('index current')).toMatchObject({ files: 1 })
    const status = JSON.parse((await runCli(['status', '--config', config, '--json'])).stdout) as { filesSkipped: number, folders: Array<{ skipped: number, skippedFiles: unknown }> }
    expect(status.filesSkipped).toBe(1)
    expect(status.folders[0]).toMatchObject({ skipped: 1, skippedFiles: [{ path: '\\xff', reason: NOT_UTF8 }] })
    expect(daemon.stderr).toContain('file skipped: its name is not valid UTF-8; rename it to index it')
    expect((await daemon.stop()).code).toBe(0)
  })
})
