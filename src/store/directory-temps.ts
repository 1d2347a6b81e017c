import { lstat, open, readdir, rm } from 'node:fs/promises'
import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import { CidBuilder, type CidProfile } from '../content/index.js'
import { processAlive } from '../util/process-alive.js'
import { chunksOf, type HeldDir } from './directory-files.js'
import type { PutOptions } from './object-store.js'

/**
 * A temp file of another host is left this long after it last changed. A store on a NAS is
 * written by several hosts; their pids mean nothing here, and a put in progress writes its file
 * without a pause this long.
 */
export const FOREIGN_TEMP_MS = 24 * 60 * 60 * 1000

/** This host as a temp file's name holds it: letters, digits, dots and dashes. */
function thisHost (): string {
  return (hostname().replace(/[^A-Za-z0-9.-]/g, '-').slice(0, 64) || 'host')
}

/** A temp file's name in `tmp/`: this host and process, so a put's temp is never taken for another's. */
function tempName (): string {
  return `${thisHost()}_${process.pid}_${randomBytes(8).toString('hex')}.part`
}

const TEMP = /^([A-Za-z0-9.-]{1,64})_(\d+)_[0-9a-f]+\.part$/
const ASIDE = /^([A-Za-z0-9.-]{1,64})_(\d+)_[0-9a-f]+\.([a-z0-9]{1,200})\.aside$/

/** A name in `tmp/` for an object's file moved aside by a delete: this host and process, and the object's CID. */
export function asideName (cid: string): string {
  return `${thisHost()}_${process.pid}_${randomBytes(8).toString('hex')}.${cid}.aside`
}

/**
 * Whether the process that made `name` in `tmp/` is gone: this host's, by its pid; another host's,
 * once the file is untouched for {@link FOREIGN_TEMP_MS}. A temp's bytes are written without a long
 * pause; a file moved aside keeps its object's time, and only its change time tells when it moved.
 */
async function madeByDead (tmp: HeldDir, name: string, made: { host: string, pid: number, by: 'mtimeMs' | 'ctimeMs', ours?: (name: string) => boolean }, now: number): Promise<boolean> {
  if (made.host === thisHost()) return made.pid === process.pid ? made.ours?.(name) === false : !processAlive(made.pid)
  return now - (await lstat(tmp.at(name)))[made.by] > FOREIGN_TEMP_MS
}

async function namesIn (tmp: HeldDir): Promise<string[]> {
  try {
    return await readdir(tmp.at('.'))
  } catch {
    return []
  }
}

/**
 * Removes the temp files of puts that are gone: this host's whose process is gone, another
 * host's once untouched for {@link FOREIGN_TEMP_MS}. Anything else in `tmp/` is left as it is.
 * It tidies only: what cannot be removed (a store made read-only, a folder planted there) is left.
 */
export async function removeDeadTemps (tmp: HeldDir, now = Date.now()): Promise<void> {
  for (const name of await namesIn(tmp)) {
    const match = TEMP.exec(name)
    if (match === null) continue
    try {
      // Never recursive: a folder planted under a temp's name is not ours to empty.
      if (await madeByDead(tmp, name, { host: match[1] as string, pid: Number(match[2]), by: 'mtimeMs' }, now)) await rm(tmp.at(name), { force: true })
    } catch {
      // Tidying only: the put itself says what is wrong with the store.
    }
  }
}

/**
 * The files that deletes of processes now gone left aside in `tmp/`, each with its object's CID.
 * One named by this pid is dead unless `underWay` holds it: a restarted container often gets the
 * pid its killed process had, on the same host name.
 */
export async function deadAsides (tmp: HeldDir, underWay: ReadonlySet<string>, now = Date.now()): Promise<Array<{ name: string, cid: string }>> {
  const found: Array<{ name: string, cid: string }> = []
  for (const name of await namesIn(tmp)) {
    const match = ASIDE.exec(name)
    if (match === null) continue
    const dead = await madeByDead(tmp, name, { host: match[1] as string, pid: Number(match[2]), by: 'ctimeMs', ours: n => underWay.has(n) }, now).catch(() => false)
    if (dead) found.push({ name, cid: match[3] as string })
  }
  return found
}

/**
 * Copies the file at `path` to a new temp file in `tmp` (0600 from its first byte), hashing it
 * under `profile`, and fsyncs it. Answers the temp's path (reached through `tmp`) and the CID; a
 * failure leaves no temp.
 */
export async function writeTemp (tmp: HeldDir, path: string, profile: CidProfile, options: PutOptions): Promise<{ temp: string, cid: string, size: number }> {
  const temp = tmp.at(tempName())
  const builder = new CidBuilder(profile)
  const out = await open(temp, 'wx', 0o600)
  let closed = false
  try {
    const source = await open(path, 'r')
    let sent = 0
    try {
      const { size: total } = await source.stat()
      for await (const chunk of chunksOf(source, options.signal)) {
        await options.throttle?.(chunk.byteLength, options.signal)
        builder.update(chunk)
        await out.write(chunk)
        sent += chunk.byteLength
        options.onProgress?.({ type: 'store:put:progress', detail: { sent, total } })
      }
    } finally {
      await source.close()
    }
    await out.sync()
    await out.close()
    closed = true
    return { temp, cid: builder.finish().toString(), size: sent }
  } catch (err) {
    if (!closed) await out.close().catch(() => {})
    await rm(temp, { force: true })
    throw err
  }
}

/** The files in `tmp/` that deletes moved `cid` to, whatever process made them: a delete may be deciding now. */
export async function asidesOf (tmp: string, cid: string): Promise<string[]> {
  const names = await readdir(tmp).catch(() => [] as string[])
  return names.filter(name => ASIDE.exec(name)?.[3] === cid)
}
