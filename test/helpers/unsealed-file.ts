import { randomBytes } from 'node:crypto'
import { realpath } from 'node:fs/promises'
import { join } from 'node:path'
import { CidBuilder, cidProfile } from '../../src/content/index.js'
import { fileKey, sealStream, type UnsealedFile } from '../../src/custody/index.js'
import type { SealPool } from '../../src/custody/seal-pool.js'

const profile = cidProfile('kubo-cidv1')

/**
 * `plain` sealed under `master`, then opened in the pool's thread as a restore opens a file of a
 * pack, verified and held there as `dir/.name...part`: what unsealFile answers.
 */
export async function unsealedFile (sealer: SealPool, master: Uint8Array, dir: string, name: string, plain: Buffer): Promise<UnsealedFile> {
  const cid = new CidBuilder(profile).update(plain).finish()
  const key = fileKey(master, cid)
  const out: Buffer[] = []
  async function * one (): AsyncGenerator<Uint8Array> { yield plain }
  for await (const chunk of sealStream(one(), { key, cid, size: plain.byteLength })) out.push(chunk.bytes)
  const blob = Buffer.concat(out)
  const view = new Uint8Array(new SharedArrayBuffer(blob.byteLength))
  view.set(blob)
  const temp = join(dir, `.${name}.cidsync-${randomBytes(6).toString('hex')}.part`)
  const job = sealer.unseal({ path: temp, key, cid: cid.toString(), cidBytes: cid.bytes, size: plain.byteLength, profile: 'kubo-cidv1', mtimeMs: 1_700_000_000_000, mode: 0o644, whole: [view] })
  const { inode } = await job.end()
  return { job: job.id, temp, target: join(dir, name), dir, expectedDir: await realpath(dir), inode, size: plain.byteLength }
}
