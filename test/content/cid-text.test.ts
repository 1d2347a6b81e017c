import { describe, expect, it } from 'vitest'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import { flatCidText } from '../../src/content/index.js'

const run = promisify(execFile)
const content = fileURLToPath(new URL('../../dist/content/index.js', import.meta.url))

/** Heap a Set of `n` CID texts holds, per entry, made by `how` (measured in a process of its own, with gc). */
async function perEntry (how: 'flat' | 'toString', n: number): Promise<number> {
  const script = `
    const { flatCidText } = await import(${JSON.stringify(content)})
    const { CID } = await import('multiformats/cid')
    const Digest = await import('multiformats/hashes/digest')
    const { randomBytes } = await import('node:crypto')
    const noise = randomBytes(32 * ${n})
    let set = new Set()
    for (let i = 0; i < ${n}; i++) {
      const cid = CID.createV1(0x55, Digest.create(0x12, noise.subarray(32 * i, 32 * (i + 1))))
      set.add(${how === 'flat' ? 'flatCidText(cid)' : 'cid.toString()'})
    }
    gc(); const held = process.memoryUsage().heapUsed
    set.clear(); set = undefined
    gc(); console.log((held - process.memoryUsage().heapUsed) / ${n})`
  const { stdout } = await run(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { cwd: fileURLToPath(new URL('../..', import.meta.url)), timeout: 120_000 })
  return Number(stdout.trim())
}

describe('flatCidText', () => {
  it('is the CID\'s text', async () => {
    const cid = CID.createV1(0x55, await sha256.digest(Uint8Array.of(1, 2, 3)))
    expect(flatCidText(cid)).toBe(cid.toString())
    expect(flatCidText(CID.parse('QmZ4tDuvesekSs4qM5ZBKpXiZGun7S2CYtEZRB3DYXkjGx'))).toBe('QmZ4tDuvesekSs4qM5ZBKpXiZGun7S2CYtEZRB3DYXkjGx')
  })

  it('holds a remembered CID in about 100 bytes, where its plain text took over a kilobyte', async () => {
    const n = 100_000
    // The plain text's cost (over 1.5 KB on Node 20) is shown, not asserted: only the flat one is ours.
    const plain = await perEntry('toString', n)
    const flat = await perEntry('flat', n)
    expect(flat, `flat ${flat} B, toString ${plain} B`).toBeLessThan(300)
  }, 120_000)
})
