import { describe, expect, it } from 'vitest'
import { join } from 'node:path'
import * as dagPb from '@ipld/dag-pb'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import { EXTERNAL } from '../../helpers/service.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { checkBlock, fetchBytes } from '../../helpers/trustless.js'
import { ok, shareKey, writeSomeFiles, type ContentDevice } from '../../cli/content-devices.js'
import { exitDevice, freshService, pointerOf, twoPublishes, type Service } from '../../exits/exit-devices.js'

interface Row { cid: string, previous: string | null, root: string | null }

async function history (d: ContentDevice): Promise<Row[]> {
  return JSON.parse((await ok(d, ['history', '--json'])).stdout) as Row[]
}

/** A block from the service's gateway (`?format=raw`), checked against its CID here. */
async function block (service: Service, cid: CID): Promise<Uint8Array> {
  const answer = await fetchBytes(service.local.url, `/ipfs/${cid.toString()}?format=raw`)
  expect(answer.status, `${cid.toString()} is on the service`).toBe(200)
  await checkBlock(cid, answer.body)
  return answer.body
}

/** Every block under `root` on the service, walked through dag-pb links as a recursive pin walks them. */
async function walk (service: Service, root: string): Promise<Map<string, Uint8Array>> {
  const blocks = new Map<string, Uint8Array>()
  const pending = [CID.parse(root)]
  for (let cid = pending.pop(); cid !== undefined; cid = pending.pop()) {
    if (blocks.has(cid.toString())) continue
    const bytes = await block(service, cid)
    blocks.set(cid.toString(), bytes)
    if (cid.code === dagPb.code) for (const link of dagPb.decode(bytes).Links) pending.push(link.Hash)
  }
  return blocks
}

const linkOf = (node: dagPb.PBNode, name: string): string | undefined => node.Links.find(l => l.Name === name)?.Hash.toString()

/** The node a root is made from, less its `content` link: the publish's node, the same on every device. */
async function withoutContent (node: dagPb.PBNode): Promise<string> {
  const bytes = dagPb.encode({ Links: node.Links.filter(l => l.Name !== 'content') })
  return CID.createV1(dagPb.code, await sha256.digest(bytes)).toString()
}

describe.skipIf(EXTERNAL)('each publish writes a plain root', () => {
  it('beside its manifest: the service holds every block under it (the publish, its segments, the content, the publish before); an export is rooted at the same CIDs; another device links the same nodes', async () => {
    const root = await useTempDir()
    const { one, a } = await twoPublishes(root)
    const rows = await history(a)
    expect(rows.map(r => r.root === null)).toEqual([false, false])
    const [second, first] = rows as [Row, Row]

    // A recursive pin of the newest root finds every block on the service, and holds both publishes.
    const blocks = await walk(one, second.root as string)
    const head = dagPb.decode(blocks.get(second.root as string) as Uint8Array)
    expect(head.Data).toBeUndefined()
    expect(head.Links.map(l => l.Name)).toEqual(['content', 'manifest', 'previous', 'segments'])
    expect(linkOf(head, 'manifest')).toBe(second.cid)
    const before = dagPb.decode(blocks.get(linkOf(head, 'previous') as string) as Uint8Array)
    expect(before.Links.map(l => l.Name)).toEqual(['manifest', 'segments'])
    expect(linkOf(before, 'manifest')).toBe(first.cid)
    // The publish before is linked by its node: its own root less the content it named then.
    expect(linkOf(head, 'previous')).toBe(await withoutContent(dagPb.decode(await block(one, CID.parse(first.root as string)))))
    // Each upload's nodes hang under its root: the service lists each root, and no node apart.
    const listed = new Set<string>()
    for await (const file of one.clients.files()) listed.add(file.cid)
    expect([listed.has(first.root as string), listed.has(second.root as string), listed.has(linkOf(head, 'previous') as string)]).toEqual([true, true, false])

    // An export makes the same root from the same chain and records; without content, the publish's node.
    const car = join(root, 'a.car')
    const done = (args: string[]): { root: string } => JSON.parse(args.at(-1) as string) as { root: string }
    expect(done((await ok(a, ['export', '--car', car, '--content', '--json'])).stdout.trim().split('\n')).root).toBe(second.root)
    expect(done((await ok(a, ['export', '--car', car, '--json'])).stdout.trim().split('\n')).root).toBe(await withoutContent(head))

    // Another device, which never uploaded a node, walks the chain back and makes the same ones.
    const b = await exitDevice(root, one, 'b')
    await shareKey(a, b)
    await ok(b, ['restore'])
    await writeSomeFiles(b.folder, 'third', { largeBytes: 10, small: 1 })
    await ok(b, ['snapshot'])
    const [third] = await history(b)
    expect(third?.previous).toBe(second.cid)
    const theirs = dagPb.decode(await block(one, CID.parse(third?.root as string)))
    expect(linkOf(theirs, 'previous')).toBe(await withoutContent(head))
    expect((await walk(one, third?.root as string)).has(first.cid)).toBe(true)
  }, 600_000)

  it('killed after its root was uploaded, before it was recorded: run again, the publish finishes with its root; a service that refuses it: published without one, said in the log', async () => {
    const root = await useTempDir()
    const one = await freshService(root, 'one')
    const a = await exitDevice(root, one, 'a')
    await writeSomeFiles(a.folder, 'first', { largeBytes: 100_000, small: 2 })
    const killed = await a.run(['snapshot'], { CIDSYNC_FAILPOINT: 'publish:root-uploaded' })
    expect(killed.signal, killed.stderr).toBe('SIGKILL')
    await ok(a, ['snapshot'])
    const [row] = await history(a)
    expect(row?.root).not.toBeNull()
    expect(await pointerOf(a)).toBe(row?.cid)
    await walk(one, row?.root as string)

    one.local.faults.set('dag_import', { errorRate: 1, status: 404 })
    await writeSomeFiles(a.folder, 'second', { largeBytes: 10, small: 1 })
    const refused = await ok(a, ['snapshot'])
    expect(refused.stderr).toContain('refused the publish\'s plain root')
    const [latest] = await history(a)
    expect(latest?.previous).toBe(row?.cid)
    expect(latest?.root).toBeNull()
  }, 600_000)
})
