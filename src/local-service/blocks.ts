import { mkdirSync, writeFileSync, renameSync, existsSync, rmSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import type { CID } from 'multiformats/cid'

/**
 * Blocks as files named by their CIDv1, fanned out by two characters. A block is written once,
 * through a temp file and a rename, so a reader never sees part of one. Blocks are not fsynced
 * one by one (a 1 GiB upload is 4,096 blocks): after a power cut a block may be missing, never torn.
 */
export class BlockStore {
  private readonly root: string
  private readonly madeDirs = new Set<string>()

  constructor (dir: string) {
    this.root = join(dir, 'blocks')
    mkdirSync(this.root, { recursive: true, mode: 0o700 })
  }

  private pathOf (cid: CID): string {
    const name = cid.toV1().toString()
    return join(this.root, name.slice(-3, -1), name)
  }

  has (cid: CID): boolean {
    return existsSync(this.pathOf(cid))
  }

  put (cid: CID, block: Uint8Array): void {
    const path = this.pathOf(cid)
    const dir = join(path, '..')
    if (!this.madeDirs.has(dir)) {
      mkdirSync(dir, { recursive: true, mode: 0o700 })
      this.madeDirs.add(dir)
    }
    // A block already there is the same bytes: writing it again is harmless and saves a stat.
    const temp = `${path}.${randomBytes(4).toString('hex')}.tmp`
    writeFileSync(temp, block, { mode: 0o600 })
    renameSync(temp, path)
  }

  /** Removes a block (one an upload cut short at its quota had just written). */
  remove (cid: CID): void {
    rmSync(this.pathOf(cid), { force: true })
  }

  async get (cid: CID): Promise<Uint8Array> {
    return await readFile(this.pathOf(cid))
  }
}
