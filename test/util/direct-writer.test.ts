import { describe, expect, it, onTestFinished } from 'vitest'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { closeSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { DIRECT_STAGE_BYTES, DirectStages, DirectWriter } from '../../src/util/direct-writer.js'
import { useTempDir } from '../helpers/temp-dir.js'

/**
 * Writes `bytes` through a DirectWriter in slices of random sizes (waiting for room before each,
 * given `room`); answers the writer (its descriptor closed), or undefined.
 */
async function writeDirect (path: string, bytes: Uint8Array, stages: DirectStages, room = false): Promise<DirectWriter | undefined> {
  const writer = DirectWriter.create(path, 0o600, stages)
  if (writer === undefined) return undefined
  try {
    for (let at = 0; at < bytes.byteLength;) {
      const take = Math.min(bytes.byteLength - at, 1 + Math.floor(Math.random() * 300_000))
      if (room) await writer.room(take)
      writer.write(bytes.subarray(at, at + take))
      at += take
    }
    await writer.finish()
  } finally {
    await writer.settled().catch(() => {})
    writer.release()
    closeSync(writer.fd)
  }
  return writer
}

describe('files written around the page cache (O_DIRECT)', () => {
  it('holds every byte, cut to its size, whatever the sizes of the writes and of the file, with one stage or several written at once', async () => {
    const dir = await useTempDir()
    const sizes = [0, 1, 4095, 4096, 4097, DIRECT_STAGE_BYTES - 1, DIRECT_STAGE_BYTES, DIRECT_STAGE_BYTES + 1, 3.5 * DIRECT_STAGE_BYTES + 17, 9 * DIRECT_STAGE_BYTES + 4099]
    // Two stages: one each (the reserve keeps the second); eight: a file takes three and writes them behind its caller.
    for (const [count, room] of [[2, false], [8, false], [8, true]] as const) {
      const stages = new DirectStages(count)
      for (const size of sizes) {
        const bytes = randomBytes(size)
        const path = join(dir, `f-${count}-${String(room)}-${size}`)
        const writer = await writeDirect(path, bytes, stages, room)
        // A filesystem without O_DIRECT (the test's temp dir on tmpfs) writes nothing: the caller falls back.
        if (writer === undefined) { expect(existsSync(path)).toBe(false); continue }
        expect(statSync(path).size).toBe(size)
        expect(readFileSync(path).equals(bytes)).toBe(true)
        expect(statSync(path).mode & 0o777).toBe(0o600)
      }
      // Every stage is back once the files are done: as many files write directly at once as with stages never used.
      const open = (from: DirectStages, name: string): DirectWriter[] => {
        const writers: DirectWriter[] = []
        for (let i = 0; i <= count; i++) {
          const w = DirectWriter.create(join(dir, `${name}-${count}-${String(room)}-${i}`), 0o600, from)
          if (w !== undefined) writers.push(w)
        }
        for (const w of writers) { w.release(); closeSync(w.fd) }
        return writers
      }
      expect(open(stages, 'used').length).toBe(open(new DirectStages(count), 'fresh').length)
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

  it.runIf(existsSync('/dev/shm'))('on tmpfs too: writes every byte where the kernel takes O_DIRECT there (6.6 on), else leaves nothing for the caller to write as usual', async () => {
    const dir = mkdtempSync('/dev/shm/cidsync-direct-')
    onTestFinished(() => { rmSync(dir, { recursive: true, force: true }) })
    const path = join(dir, 'f')
    const bytes = randomBytes(DIRECT_STAGE_BYTES + 5000)
    if (await writeDirect(path, bytes, new DirectStages(1)) === undefined) expect(existsSync(path)).toBe(false)
    else expect(readFileSync(path).equals(bytes)).toBe(true)
  })

  it.runIf(existsSync('/proc/self/fd') && spawnSync('prlimit', ['--version']).status === 0)('writes a file that fits under the file size limit (its last sector is not padded past it), and names the limit (EFBIG) for one that does not, wherever the limit cuts', async () => {
    const dir = await useTempDir()
    const built = fileURLToPath(new URL('../../dist/util/direct-writer.js', import.meta.url))
    // A child under `prlimit --fsize` (bytes) writes through the built module: the limit is per process.
    const write = (limit: number, size: number, path: string, stages: number): { status: number | null, stderr: string } => {
      const script = `import { DirectStages, DirectWriter } from ${JSON.stringify(built)}; import { closeSync } from 'node:fs'; import { randomBytes } from 'node:crypto'
        const w = DirectWriter.create(${JSON.stringify(path)}, 0o600, new DirectStages(${stages})); if (w === undefined) process.exit(3)
        try { const bytes = randomBytes(${size}); for (let at = 0; at < bytes.length; at += 65536) { await w.room(65536); w.write(bytes.subarray(at, at + 65536)) } await w.finish() }
        catch (err) { console.error(err.code); process.exit(5) } finally { await w.settled().catch(() => {}); w.release(); closeSync(w.fd) }`
      const done = spawnSync('prlimit', [`--fsize=${limit}`, process.execPath, '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 })
      return { status: done.status, stderr: done.stderr }
    }
    const size = DIRECT_STAGE_BYTES + 1
    const fits = write(size, size, join(dir, 'fits'), 1)
    if (fits.status === 3) return // no O_DIRECT on this temp dir's filesystem
    expect(fits, fits.stderr).toMatchObject({ status: 0 })
    expect(statSync(join(dir, 'fits')).size).toBe(size)
    // Cut at a sector's end (4 KiB), inside a sector (not a multiple of 512: O_DIRECT's EINVAL), and inside the tail.
    // One stage (each written at once) or eight (written behind the caller, the failure told later).
    for (const stages of [1, 8]) {
      for (const limit of [1_048_576 - 8192, 1_048_000, 2 * DIRECT_STAGE_BYTES + 100]) {
        const over = write(limit, 2 * DIRECT_STAGE_BYTES + 4097, join(dir, `over-${stages}-${limit}`), stages)
        expect(over.status, `limit ${limit}, ${stages} stages: ${over.stderr}`).toBe(5)
        expect(over.stderr.trim(), `limit ${limit}, ${stages} stages`).toBe('EFBIG')
      }
    }
  })
})
