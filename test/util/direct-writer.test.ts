import { describe, expect, it, onTestFinished } from 'vitest'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { closeSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { DIRECT_STAGE_BYTES, DirectStages, DirectWriter } from '../../src/util/direct-writer.js'
import { useTempDir } from '../helpers/temp-dir.js'

/** Writes `bytes` through a DirectWriter in slices of random sizes; answers the writer (its descriptor closed), or undefined. */
function writeDirect (path: string, bytes: Uint8Array, stages: DirectStages): DirectWriter | undefined {
  const writer = DirectWriter.create(path, 0o600, stages)
  if (writer === undefined) return undefined
  try {
    for (let at = 0; at < bytes.byteLength;) {
      const take = Math.min(bytes.byteLength - at, 1 + Math.floor(Math.random() * 300_000))
      writer.write(bytes.subarray(at, at + take))
      at += take
    }
    writer.finish()
  } finally {
    writer.release()
    closeSync(writer.fd)
  }
  return writer
}

describe('files written around the page cache (O_DIRECT)', () => {
  it('holds every byte, cut to its size, whatever the sizes of the writes and of the file', async () => {
    const dir = await useTempDir()
    const stages = new DirectStages(2)
    const sizes = [0, 1, 4095, 4096, 4097, DIRECT_STAGE_BYTES - 1, DIRECT_STAGE_BYTES, DIRECT_STAGE_BYTES + 1, 3.5 * DIRECT_STAGE_BYTES + 17]
    for (const size of sizes) {
      const bytes = randomBytes(size)
      const path = join(dir, `f-${size}`)
      const writer = writeDirect(path, bytes, stages)
      // A filesystem without O_DIRECT (the test's temp dir on tmpfs) writes nothing: the caller falls back.
      if (writer === undefined) { expect(existsSync(path)).toBe(false); continue }
      expect(statSync(path).size).toBe(size)
      expect(readFileSync(path).equals(bytes)).toBe(true)
      expect(statSync(path).mode & 0o777).toBe(0o600)
    }
  })

  it('never opens a file that is there, and leaves it as it was', async () => {
    const dir = await useTempDir()
    const path = join(dir, 'there')
    writeFileSync(path, 'the user\'s')
    expect(() => DirectWriter.create(path, 0o600, new DirectStages(1))).toThrow(/EEXIST/)
    expect(readFileSync(path, 'utf8')).toBe('the user\'s')
  })

  it('answers undefined, leaving nothing behind, when every stage is lent, and takes a stage given back', async () => {
    const dir = await useTempDir()
    const stages = new DirectStages(1)
    const first = DirectWriter.create(join(dir, 'a'), 0o600, stages)
    if (first === undefined) return // no O_DIRECT here: nothing to lend
    onTestFinished(() => { closeSync(first.fd) })
    expect(DirectWriter.create(join(dir, 'b'), 0o600, stages)).toBeUndefined()
    expect(existsSync(join(dir, 'b'))).toBe(false)
    first.release()
    first.release()
    const second = DirectWriter.create(join(dir, 'c'), 0o600, stages)
    expect(second).toBeDefined()
    if (second !== undefined) { second.release(); closeSync(second.fd) }
    // Given back twice, the stage is still lent once at a time.
    const third = DirectWriter.create(join(dir, 'd'), 0o600, stages)
    const fourth = DirectWriter.create(join(dir, 'e'), 0o600, stages)
    expect(third !== undefined && fourth !== undefined).toBe(false)
    for (const w of [third, fourth]) if (w !== undefined) { w.release(); closeSync(w.fd) }
  })

  it.runIf(existsSync('/dev/shm'))('on tmpfs too: writes every byte where the kernel takes O_DIRECT there (6.6 on), else leaves nothing for the caller to write as usual', () => {
    const dir = mkdtempSync('/dev/shm/cidsync-direct-')
    onTestFinished(() => { rmSync(dir, { recursive: true, force: true }) })
    const path = join(dir, 'f')
    const bytes = randomBytes(DIRECT_STAGE_BYTES + 5000)
    if (writeDirect(path, bytes, new DirectStages(1)) === undefined) expect(existsSync(path)).toBe(false)
    else expect(readFileSync(path).equals(bytes)).toBe(true)
  })

  it.runIf(existsSync('/proc/self/fd') && spawnSync('prlimit', ['--version']).status === 0)('writes a file that fits under the file size limit (its last sector is not padded past it), and names the limit (EFBIG) for one that does not, wherever the limit cuts', async () => {
    const dir = await useTempDir()
    const built = fileURLToPath(new URL('../../dist/util/direct-writer.js', import.meta.url))
    // A child under `prlimit --fsize` (bytes) writes through the built module: the limit is per process.
    const write = (limit: number, size: number, path: string): { status: number | null, stderr: string } => {
      const script = `import { DirectStages, DirectWriter } from ${JSON.stringify(built)}; import { closeSync } from 'node:fs'; import { randomBytes } from 'node:crypto'
        const w = DirectWriter.create(${JSON.stringify(path)}, 0o600, new DirectStages(1)); if (w === undefined) process.exit(3)
        try { w.write(randomBytes(${size})); w.finish() } catch (err) { console.error(err.code); process.exit(5) } finally { w.release(); closeSync(w.fd) }`
      const done = spawnSync('prlimit', [`--fsize=${limit}`, process.execPath, '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 })
      return { status: done.status, stderr: done.stderr }
    }
    const size = DIRECT_STAGE_BYTES + 1
    const fits = write(size, size, join(dir, 'fits'))
    if (fits.status === 3) return // no O_DIRECT on this temp dir's filesystem
    expect(fits, fits.stderr).toMatchObject({ status: 0 })
    expect(statSync(join(dir, 'fits')).size).toBe(size)
    // Cut at a sector's end (4 KiB), inside a sector (not a multiple of 512: O_DIRECT's EINVAL), and inside the tail.
    for (const limit of [1_048_576 - 8192, 1_048_000, 2 * DIRECT_STAGE_BYTES + 100]) {
      const over = write(limit, 2 * DIRECT_STAGE_BYTES + 4097, join(dir, `over-${limit}`))
      expect(over.status, `limit ${limit}: ${over.stderr}`).toBe(5)
      expect(over.stderr.trim(), `limit ${limit}`).toBe('EFBIG')
    }
  })
})
