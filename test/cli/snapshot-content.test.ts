import { describe, expect, it } from 'vitest'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { runCli } from '../helpers/cli.js'
import { startInProcessDaemon, untilReached } from '../helpers/in-process-daemon.js'
import { useTempDir } from '../helpers/temp-dir.js'

describe('cidsync snapshot through the daemon, with folders that store content', () => {
  it('says what it stored first, names each file not stored (names neutralised) and exits 1, not 0', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'kept'))
    await writeFile(join(dir, 'kept', 'small.txt'), 'tiny')
    await writeFile(join(dir, 'kept', 'large\u001b[2J.bin'), 'x'.repeat(200))
    const { port, config } = await startInProcessDaemon(dir, '[[folders]]\nname = "kept"\npath = "kept"\nstore = true\n[content]\nmax_file_size = "100"\n')
    await untilReached(port)
    const snap = await runCli(['snapshot', '--config', config], { timeoutMs: 120_000 })
    expect(snap.stdout).toMatch(/^bafk\S+ {2}\d+ entries/)
    expect(snap.stderr).toContain('of content first')
    expect(snap.stderr).toContain('not stored: kept/large\\x1b[2J.bin: 200 bytes, more than [content] max_file_size (100) [ERR_CONTENT_TOO_LARGE]')
    expect(snap.stderr).not.toContain('\u001b')
    expect(snap.stderr).toContain('[ERR_CONTENT_NOT_STORED]')
    expect(snap.code).toBe(1)
  }, 180_000)
})
