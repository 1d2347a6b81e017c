import { describe, expect, it } from 'vitest'
import { readFile, readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { closeSync, openSync, readSync } from 'node:fs'
import * as dagPb from '@ipld/dag-pb'
import { CID } from 'multiformats/cid'
import { useTempDir } from '../helpers/temp-dir.js'
import { flipStoredBlock } from '../helpers/service-blocks.js'
import { ok } from './content-devices.js'
import { embeddedDevice } from './retention-devices.js'
import { allRecordObjects, forgetFirstOfThree, type PruneJson } from './repack-devices.js'
import { sha } from './retention-devices.js'

const RETENTION = '[retention]\nkeep_last = 2\nprune_margin = "0s"\n'

/** The object this device's record names for `file` (by its path under notes/). */
function objectOf (state: string, path: string): string {
  const db = new Database(join(state, 'index.sqlite'), { readonly: true })
  try {
    const objects = db.prepare('SELECT c.objects FROM entries e JOIN content c ON c.cid = e.cid WHERE e.path = ? AND e.deleted = 0').pluck().get(path) as string
    return (JSON.parse(objects) as Array<[string]>)[0]?.[0] ?? ''
  } finally {
    db.close()
  }
}

/** The first leaf of a stored object (its root read from the service's pack). */
function firstLeaf (serviceDir: string, cid: string): string {
  const db = new Database(join(serviceDir, 'service.sqlite'), { readonly: true })
  const place = db.prepare('SELECT pack, offset, length FROM blocks WHERE cid = ?').get(CID.parse(cid).toV1().bytes) as { pack: number, offset: number, length: number }
  db.close()
  const fd = openSync(join(serviceDir, 'packs', `${String(place.pack).padStart(8, '0')}.pack`), 'r')
  const bytes = Buffer.alloc(place.length)
  readSync(fd, bytes, 0, place.length, place.offset)
  closeSync(fd)
  const node = dagPb.decode(bytes)
  const first = node.Links[0]?.Hash
  if (first === undefined) return cid
  return first.code === 0x55 ? first.toString() : firstLeaf(serviceDir, first.toString())
}

/**
 * Attack: the embedded service's pack of a mostly dead content pack is damaged on disk (one byte
 * flipped). The repack reads it through getBytes hashed slab by slab on a thread: it must refuse
 * it (left whole, counted unread), copy none of it into a new pack, record no move; `get`,
 * `restore --files` and `verify --content` must refuse it too, writing no file with wrong bytes.
 */
describe('a damaged pack on the embedded service', () => {
  it('is never copied into a new pack, nor written as a file', async () => {
    const root = await useTempDir()
    const service = join(root, 'service')
    const a = await embeddedDevice(root, 'a', service, RETENTION)
    const all = Array.from({ length: 16 }, (_, i) => i)
    const { v3 } = await forgetFirstOfThree(a, all.length)
    const pack = objectOf(a.state, 's15.txt')
    // One byte of its first leaf flipped behind the service's back.
    flipStoredBlock(service, firstLeaf(service, pack), 'middle')
    const before = new Set(allRecordObjects(a))

    const pruned = JSON.parse((await ok(a, ['prune', '--json'], { CIDSYNC_TEST_REPACK_SLAB: '4096' })).stdout) as PruneJson & { repacked: { unread?: number } }
    expect(pruned.repacked).toMatchObject({ made: 0, blobs: 0, unread: 1 })
    expect(new Set(allRecordObjects(a))).toEqual(before)
    // No spool file left, none readable by others.
    const snapshots = join(a.state, 'snapshots')
    for (const name of await readdir(snapshots)) expect(((await stat(join(snapshots, name))).mode & 0o077), name).toBe(0)

    // The files of the damaged pack are never written with other bytes.
    const to = join(root, 'got')
    const got = await a.run(['get', ...all.slice(8).map(i => `notes/s${i}.txt`), '--to', to])
    expect(got.code, got.stderr).not.toBe(0)
    for (const i of all.slice(8)) {
      const bytes = await readFile(join(to, 'notes', `s${i}.txt`)).catch(() => undefined)
      if (bytes !== undefined) expect(sha(bytes), `s${i}.txt`).toBe(v3.get(`s${i}.txt`))
    }
    const files = join(root, 'files')
    const restored = await a.run(['restore', '--files', '--to', files])
    expect(restored.code, restored.stderr).not.toBe(0)
    for (const i of all) {
      const bytes = await readFile(join(files, 'notes', `s${i}.txt`)).catch(() => undefined)
      if (bytes !== undefined) expect(sha(bytes), `s${i}.txt`).toBe(v3.get(`s${i}.txt`))
    }
    const verified = await a.run(['verify', '--content'])
    expect(verified.code, verified.stdout + verified.stderr).toBe(4)
  }, 600_000)
})
