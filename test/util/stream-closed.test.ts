import { describe, expect, it } from 'vitest'
import { createWriteStream } from 'node:fs'
import { readdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { streamClosed } from '../../src/util/stream-closed.js'
import { createWriteBackStream } from '../../src/util/write-back-stream.js'
import { useTempDir } from '../helpers/temp-dir.js'

describe('a file stream waited on until it has closed', () => {
  it('lets a file removed afterwards stay removed, even when the stream was still opening', async () => {
    const dir = await useTempDir()
    for (const [name, make] of [['fs', createWriteStream], ['write-back', createWriteBackStream]] as const) {
      const path = join(dir, `${name}.tmp`)
      const stream = make(path)
      await streamClosed(stream)
      await rm(path, { force: true })
      expect(await readdir(dir), name).toEqual([])
    }
  })

  it('answers at once for a stream already closed, and after an error', async () => {
    const dir = await useTempDir()
    const stream = createWriteStream(join(dir, 'a'))
    await new Promise<void>(resolve => { stream.end(() => { resolve() }) })
    await new Promise<void>(resolve => { if (stream.closed) resolve(); else stream.once('close', () => { resolve() }) })
    await streamClosed(stream)
    const failed = createWriteStream(join(dir, 'missing', 'b'))
    failed.on('error', () => {})
    await streamClosed(failed)
    expect(failed.closed).toBe(true)
  })
})
