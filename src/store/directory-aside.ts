import { link, lstat, rename, rm } from 'node:fs/promises'
import { canonical, type HeldDir } from './directory-files.js'
import { asideName, deadAsides } from './directory-temps.js'

/** Runs `fn` in the shard folder of `cid`, then makes what it did durable. */
export type InShard = (cid: string, fn: (shard: HeldDir) => Promise<void>) => Promise<void>

/** The names of the asides this process's deletes hold now: any other named by this pid is a dead one's. */
const underWay = new Set<string>()

/**
 * Removes the object's file if it was stored before `before` (ms). The file is moved aside into
 * `tmp/` first, and its time read there: a put renamed into place after the move is not touched,
 * and one renamed in before it shows in the moved file's time and is put back. A stat and then a
 * remove would take a put that landed between them. A process killed with a file aside has it put
 * back by the next {@link putBackDeadAsides}: a killed delete is undone, never half done.
 */
export async function removeIfStoredBefore (tmp: HeldDir, inShard: InShard, cid: string, before: number): Promise<boolean> {
  const name = asideName(cid)
  underWay.add(name)
  try {
    return await moveAsideAndDecide(tmp, inShard, cid, before, tmp.at(name))
  } finally {
    underWay.delete(name)
  }
}

async function moveAsideAndDecide (tmp: HeldDir, inShard: InShard, cid: string, before: number, aside: string): Promise<boolean> {
  let moved = false
  await inShard(cid, async (shard) => {
    moved = await rename(shard.at(cid), aside).then(() => true, (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return false
      throw err
    })
  })
  if (!moved) return false
  const stats = await lstat(aside)
  if (stats.isFile() && stats.mtimeMs < before) {
    await rm(aside, { force: true })
    await tmp.sync()
    return true
  }
  await putBack(tmp, inShard, aside, cid)
  return false
}

/** Puts the files that deletes of processes now gone left aside back in place. A tidy: a failure leaves them. */
export async function putBackDeadAsides (tmp: HeldDir, inShard: InShard): Promise<void> {
  for (const { name, cid } of await deadAsides(tmp, underWay)) {
    if (canonical(cid) === undefined) continue
    await putBack(tmp, inShard, tmp.at(name), cid).catch(() => {})
  }
}

/** A file moved aside back at its object's path, unless a put has placed the object there since. */
async function putBack (tmp: HeldDir, inShard: InShard, aside: string, cid: string): Promise<void> {
  await inShard(cid, async (shard) => {
    await link(aside, shard.at(cid)).catch((err: NodeJS.ErrnoException) => { if (err.code !== 'EEXIST') throw err })
  })
  await rm(aside, { force: true })
  await tmp.sync()
}
