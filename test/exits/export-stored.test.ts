import { describe, expect, it } from 'vitest'
import { existsSync } from 'node:fs'
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import * as dagPb from '@ipld/dag-pb'
import { CID } from 'multiformats/cid'
import { EXTERNAL } from '../helpers/service.js'
import { runCli } from '../helpers/cli.js'
import { flipStoredBlock, hideStoredBlock, storedBlockPack } from '../helpers/service-blocks.js'
import { device, ok, proofDir } from '../proof/harness.js'
import { readCar } from './exit-devices.js'

const LEAF = 256 * 1024

interface Line { type: string, cid?: string, kind?: string, root?: string, publish?: string }

/**
 * `export` on the embedded service reads the blocks from its store in process (no HTTP hop),
 * checking each against its CID before it is written.
 */
describe.skipIf(EXTERNAL)('export --car on the embedded service', () => {
  it('writes every object whole from the store (an independent reader finds each block, each DAG complete); a damaged stored block fails it (exit 4, the block named) and a missing one (exit 1), with no FILE; killed, FILE as it was', async () => {
    const root = await proofDir()
    const a = await device(root, 'a', { extra: '[[folders]]\nname = "kept"\npath = "kept"\nstore = true\n' })
    await mkdir(join(a.root, 'kept'), { recursive: true })
    await writeFile(join(a.root, 'kept', 'small.txt'), 'small\n')
    await writeFile(join(a.root, 'kept', 'large.bin'), randomBytes(3 * LEAF + 1000))
    await ok(['snapshot', '--config', a.config], { timeoutMs: 120_000 })
    const car = join(root, 'out.car')
    const lines = (await ok(['export', '--car', car, '--content', '--json', '--config', a.config], { timeoutMs: 120_000 })).stdout.trim().split('\n').map(l => JSON.parse(l) as Line)
    const done = lines.at(-1) as Line
    const objects = lines.filter(l => l.type === 'object')
    expect(objects.some(o => o.kind === 'content')).toBe(true)

    const read = await readCar(car)
    expect(read.roots).toEqual([done.root])
    // Every object's DAG is whole in the CAR: its root and every block a node links to.
    for (const object of objects) expect(read.blocks.has(object.cid as string), `object ${object.kind} ${object.cid}`).toBe(true)
    const leaves: string[] = []
    for (const [text, bytes] of read.blocks) {
      const cid = CID.parse(text)
      if (cid.code === dagPb.code) {
        for (const link of dagPb.decode(bytes).Links) expect(read.blocks.has(link.Hash.toString()), `${link.Hash.toString()} linked from ${text}`).toBe(true)
      } else if (bytes.byteLength === LEAF) leaves.push(text)
    }
    expect(leaves.length).toBeGreaterThan(0)
    const leaf = leaves[0] as string

    // A stored leaf damaged on the disk: the export stops at it, names it, writes nothing.
    const serviceDir = join(root, 'service')
    flipStoredBlock(serviceDir, leaf)
    const again = join(root, 'again.car')
    const damaged = await runCli(['export', '--car', again, '--content', '--config', a.config], { timeoutMs: 120_000 })
    expect(damaged.code, damaged.stderr).toBe(4)
    expect(damaged.stderr).toContain('[ERR_INTEGRITY]')
    expect(damaged.stderr).toContain(leaf)
    expect(damaged.stderr).toContain('no CAR was written')
    expect(existsSync(again)).toBe(false)
    flipStoredBlock(serviceDir, leaf)

    // The same leaf gone from the store: incomplete, named, nothing written.
    const restore = hideStoredBlock(serviceDir, leaf)
    const missing = await runCli(['export', '--car', again, '--content', '--config', a.config], { timeoutMs: 120_000 })
    expect(missing.code, missing.stderr).toBe(1)
    expect(missing.stderr).toContain('[ERR_EXPORT_INCOMPLETE]')
    expect(missing.stderr).toContain(leaf)
    expect(existsSync(again)).toBe(false)
    restore()

    // Killed (SIGKILL) after an object was written, and just before the rename: FILE as it was.
    await writeFile(again, 'an earlier CAR')
    for (const moment of ['export:object', 'export:before-rename']) {
      const killed = await runCli(['export', '--car', again, '--content', '--config', a.config], { timeoutMs: 120_000, env: { ...process.env, CIDSYNC_FAILPOINT: moment } })
      expect(killed.signal, `${moment}: ${killed.stderr}`).toBe('SIGKILL')
      expect(await readFile(again, 'utf8')).toBe('an earlier CAR')
    }

    // The pack holding the chain gone from the data dir: the first object's own read names it
    // (exit 4), before what is taken ahead of it (the content's index, built from the segments)
    // can fail with a gateway's 500.
    const chainPack = storedBlockPack(serviceDir, done.publish as string)
    await rename(chainPack, `${chainPack}.away`)
    const noChain = await runCli(['export', '--car', again, '--content', '--config', a.config], { timeoutMs: 120_000 })
    await rename(`${chainPack}.away`, chainPack)
    expect(noChain.code, noChain.stderr).toBe(4)
    expect(noChain.stderr).toContain('[ERR_SERVICE_DATA_DAMAGED]')
    expect(noChain.stderr).toContain(`manifest ${done.publish as string}`)
    expect(await readFile(again, 'utf8')).toBe('an earlier CAR')

    // What a killed export left aside (its content index, for a process now gone) is removed by the next one.
    const leftover = join(a.state, 'snapshots', 'export-content-999999999.sqlite')
    for (const suffix of ['', '-wal']) await writeFile(`${leftover}${suffix}`, 'left by a killed export')

    // Whole again: the same CAR, byte for byte (the walk's order is fixed).
    await ok(['export', '--car', again, '--content', '--config', a.config], { timeoutMs: 120_000 })
    const rewritten = await readCar(again)
    expect([...rewritten.blocks.keys()]).toEqual([...read.blocks.keys()])
    expect((await readdir(root)).filter(n => n.includes('cidsync-export'))).toEqual([])
    expect((await readdir(join(a.state, 'snapshots'))).filter(n => n.startsWith('export-content-')), 'indexes built aside, left').toEqual([])
  }, 300_000)
})
