import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { createWriteBackStream } from '../../src/util/write-back-stream.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'

const openFds = (): number => readdirSync('/proc/self/fd').length

describe('createWriteBackStream (a file sent to the disk as it is written)', () => {
  it('writes every byte in order, with its own syncs between the writes, at the mode asked', async () => {
    const dir = await useTempDir()
    const path = join(dir, 'f')
    const chunks = Array.from({ length: 40 }, (_, i) => randomBytes(1000 + i * 4099))
    // A sync every 8 KiB: many start while writes go on.
    await pipeline(Readable.from(chunks), createWriteBackStream(path, { mode: 0o600, everyBytes: 8192 }))
    expect(readFileSync(path).equals(Buffer.concat(chunks))).toBe(true)
    expect(statSync(path).mode & 0o777).toBe(0o600)
  })

  it.runIf(existsSync('/proc/self/fd'))('closes its file when the stream is destroyed mid-write, and fails the pipeline', async () => {
    const dir = await useTempDir()
    // One stream made and ended first: whatever node opens once for file work is open before counting.
    await pipeline(Readable.from([Buffer.from('warm')]), createWriteBackStream(join(dir, 'warm'), { everyBytes: 1 }))
    const before = openFds()
    const source = new Readable({ read () {} })
    const done = pipeline(source, createWriteBackStream(join(dir, 'f'), { everyBytes: 1024 }))
    source.push(randomBytes(64 * 1024))
    source.destroy(new Error('the source broke'))
    await expect(done).rejects.toThrow('the source broke')
    // Closed once its sync in flight (if any) ends: waited for, not assumed.
    await until(() => openFds() === before ? true : undefined, 5_000, 'the stream\'s file closed')
  })

  it('fails when its file cannot be made', async () => {
    const dir = await useTempDir()
    await expect(pipeline(Readable.from([Buffer.from('x')]), createWriteBackStream(join(dir, 'no', 'such', 'dir')))).rejects.toMatchObject({ code: 'ENOENT' })
  })

  it.runIf(spawnSync('prlimit', ['--version']).status === 0)('fails with the write that the disk (here the file size limit) refused, not later', async () => {
    const dir = await useTempDir()
    const built = fileURLToPath(new URL('../../dist/util/write-back-stream.js', import.meta.url))
    const script = `import { createWriteBackStream } from ${JSON.stringify(built)}; import { Readable } from 'node:stream'; import { pipeline } from 'node:stream/promises'
      process.on('SIGXFSZ', () => {})
      try { await pipeline(Readable.from([Buffer.alloc(300000), Buffer.alloc(300000)]), createWriteBackStream(${JSON.stringify(join(dir, 'f'))}, { everyBytes: 65536 })); console.error('ok') } catch (err) { console.error(err.code); process.exit(5) }`
    const done = spawnSync('prlimit', ['--fsize=400000', process.execPath, '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 })
    expect(done.status, done.stderr).toBe(5)
    expect(done.stderr.trim()).toBe('EFBIG')
  })

  it('fails with a sync the disk refused (EIO from fdatasync), and closes its file', async () => {
    const dir = await useTempDir()
    const built = fileURLToPath(new URL('../../dist/util/write-back-stream.js', import.meta.url))
    // node's own fdatasync made to fail, in a child of its own: nothing of cidsync's is replaced.
    const script = `import fs from 'node:fs'; import { syncBuiltinESMExports } from 'node:module'
      fs.fdatasync = (fd, cb) => { const e = new Error('EIO: i/o error, fdatasync'); e.code = 'EIO'; e.syscall = 'fdatasync'; setTimeout(cb, 5, e) }; syncBuiltinESMExports()
      const { createWriteBackStream } = await import(${JSON.stringify(built)}); const { Readable } = await import('node:stream'); const { pipeline } = await import('node:stream/promises')
      const chunks = Array.from({ length: 64 }, () => Buffer.alloc(65536, 7))
      try { await pipeline(Readable.from(chunks), createWriteBackStream(${JSON.stringify(join(dir, 'f'))}, { everyBytes: 65536 })); console.error('ok') } catch (err) { console.error(err.code, err.syscall); process.exit(5) }`
    const done = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 })
    expect(done.status, done.stderr).toBe(5)
    expect(done.stderr.trim()).toBe('EIO fdatasync')
  })
})

