import { describe, expect, it } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { checkOpenFilesLimit, MIN_OPEN_FILES, openFilesLimit } from '../../src/util/open-files-limit.js'
import { useTempDir } from '../helpers/temp-dir.js'

const CLI = fileURLToPath(new URL('../../dist/bin/cidsync.js', import.meta.url))

describe('the open files limit', () => {
  it('is read from a limits file as its soft value; unlimited or absent is no limit', async () => {
    const dir = await useTempDir()
    const limits = join(dir, 'limits')
    await writeFile(limits, 'Limit                     Soft Limit           Hard Limit           Units\nMax open files            64                   4096                 files\n')
    expect(openFilesLimit(limits)).toBe(64)
    await writeFile(limits, 'Max open files            unlimited            unlimited            files\n')
    expect(openFilesLimit(limits)).toBeUndefined()
    expect(openFilesLimit(join(dir, 'none'))).toBeUndefined()
    expect(() => { checkOpenFilesLimit(MIN_OPEN_FILES) }).not.toThrow()
    expect(() => { checkOpenFilesLimit(undefined) }).not.toThrow()
    expect(() => { checkOpenFilesLimit(64) }).toThrow(/only 64 files at once \(ulimit -n\), and cidsync needs at least 1024: raise it/)
  })

  it.runIf(process.platform === 'linux')('refuses a command under a hard limit too low, with what to do, exit 2', () => {
    // bash sets both limits; node cannot raise the soft one past the hard one.
    const run = spawnSync('bash', ['-c', 'ulimit -n 64 && exec "$0" "$1" status --config /nonexistent.toml', process.execPath, CLI], { encoding: 'utf8', timeout: 60_000 })
    expect(run.status, run.stderr).toBe(2)
    expect(run.stderr).toContain('may open only 64 files at once')
    expect(run.stderr).toContain('[ERR_OPEN_FILES_LIMIT]')
    // The version and the help open nothing: they answer whatever the limit.
    for (const args of [['--version'], ['help', 'get'], ['get', '--help']]) {
      const brief = spawnSync('bash', ['-c', 'ulimit -n 64 && exec "$0" "$@"', process.execPath, CLI, ...args], { encoding: 'utf8', timeout: 60_000 })
      expect(brief.status, `${args.join(' ')}: ${brief.stderr}`).toBe(0)
    }
  })
})
