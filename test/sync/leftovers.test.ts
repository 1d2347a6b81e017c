import { describe, expect, it } from 'vitest'
import { spawn } from 'node:child_process'
import { mkdir, readdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { removeLeftovers } from '../../src/sync/leftovers.js'
import { useTempDir } from '../helpers/temp-dir.js'

/** The id of a process that ran and is gone. */
async function deadPid (): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' })
  await new Promise(resolve => child.on('close', resolve))
  return child.pid as number
}

describe('leftovers of killed runs', () => {
  it('removes the fetched objects and past index of a get killed midway, never a running one\'s', async () => {
    const state = await useTempDir()
    const dead = await deadPid()
    await mkdir(join(state, 'content-fetch', String(dead)), { recursive: true })
    await writeFile(join(state, 'content-fetch', String(dead), 'bafkreiobject'), Buffer.alloc(1000))
    await mkdir(join(state, 'content-fetch', String(process.pid)), { recursive: true })
    await writeFile(join(state, 'content-fetch', String(process.pid), 'bafkreiobject'), Buffer.alloc(10))
    await mkdir(join(state, 'snapshots'))
    await writeFile(join(state, 'snapshots', `past-${dead}-1795533339393.sqlite`), Buffer.alloc(500))
    await writeFile(join(state, 'snapshots', `past-${process.pid}-1795533339393.sqlite`), Buffer.alloc(5))

    const removed = await removeLeftovers(state, [])
    expect(removed.bytes).toBe(1500)
    expect(await readdir(join(state, 'content-fetch'))).toEqual([String(process.pid)])
    expect(await readdir(join(state, 'snapshots'))).toEqual([`past-${process.pid}-1795533339393.sqlite`])
  })
})
