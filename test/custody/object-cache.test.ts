import { describe, expect, it } from 'vitest'
import { existsSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import * as raw from 'multiformats/codecs/raw'
import { ObjectCache } from '../../src/custody/index.js'
import { useTempDir } from '../helpers/temp-dir.js'

async function cidOf (text: string): Promise<string> {
  return CID.createV1(raw.code, await sha256.digest(new TextEncoder().encode(text))).toString()
}

describe('objects fetched for a restore', () => {
  it('fetches an object once for files restored at once, and keeps it until the last of them is done with it', async () => {
    const dir = await useTempDir()
    const cid = await cidOf('part')
    let fetches = 0
    const cache = new ObjectCache(join(dir, 'objects'), async (_cid, destination) => {
      fetches++
      await writeFile(destination, 'part')
    })
    // Two files with the same content, restored at the same time, read the same part.
    const [first, second] = await Promise.all([cache.get(cid, 4), cache.get(cid, 4)])
    expect(first).toBe(second)
    expect(fetches).toBe(1)
    await cache.release(cid)
    // The other file still reads it (before: removed under it).
    expect(existsSync(second)).toBe(true)
    await cache.release(cid)
    expect(existsSync(second)).toBe(false)
    // Asked for again afterwards: fetched again.
    expect(existsSync(await cache.get(cid, 4))).toBe(true)
    expect(fetches).toBe(2)
    await cache.clear()
  })

  it('counts a failed fetch as no reader, so a later release removes what a later fetch brought', async () => {
    const dir = await useTempDir()
    const cid = await cidOf('flaky')
    let calls = 0
    const cache = new ObjectCache(join(dir, 'objects'), async (_cid, destination) => {
      if (++calls === 1) throw new Error('reset')
      await writeFile(destination, 'flaky')
    })
    await expect(cache.get(cid, 5)).rejects.toThrow('reset')
    const path = await cache.get(cid, 5)
    await cache.release(cid)
    expect(existsSync(path)).toBe(false)
    await cache.clear()
  })
})
