import { rm } from 'node:fs/promises'
import { ContentIntegrityError } from '../errors.js'
import { MAX_OBJECT_BYTES } from './layout.js'
import type { ObjectMemory } from './object-memory.js'
import type { SealPool, UnsealInit, Unsealer } from './seal-pool.js'
import type { UnsealedFile } from './durable-batch.js'
import { unsealJobOf, type UnsealFileInit } from './unseal-file.js'

/** A file of the pack, its job made: its temp and where it goes. */
interface Ready {
  readonly at: number
  readonly init: Omit<UnsealFileInit, 'memory' | 'pool'>
  readonly dir: string
  readonly expectedDir: string
  readonly temp: string
  readonly job: Omit<UnsealInit, 'whole'>
  readonly offset: number
  readonly length: number
}

/**
 * Brings back files of one pack, as {@link unsealFile} does each: every record names that one
 * object, and every file was announced to `memory` (`expect`). The pack is read once, and the
 * files go to one sealing thread in one message, answered in one: two messages a batch, not two
 * a file. Answers, in order, each file's verified temp (held open by its thread, for a
 * `DurableBatch`) or its error (its temp removed). Each file releases the pack once, read or not.
 */
export async function unsealPackFiles (files: ReadonlyArray<Omit<UnsealFileInit, 'memory' | 'pool'>>, memory: ObjectMemory, pool: SealPool, signal?: AbortSignal): Promise<Array<UnsealedFile | Error>> {
  const results: Array<UnsealedFile | Error> = new Array(files.length)
  const object = files[0]?.record.objects[0]?.[0] ?? ''
  const ready: Ready[] = []
  for (const [at, init] of files.entries()) {
    try {
      const [named, offset, length] = init.record.objects[0] as readonly [string, number, number]
      if (init.record.objects.length !== 1 || named !== object) throw new ContentIntegrityError(`the content record of ${init.row.cid.toString()} is not one of the pack ${object}`)
      ready.push({ at, init, ...await unsealJobOf(init), offset, length })
    } catch (err) {
      results[at] = err as Error
      memory.release(object)
    }
  }
  if (ready.length === 0) return results
  // Files refused before their thread answered: each releases the pack.
  const refuse = (files: readonly Ready[], err: (file: Ready) => Error, reusable: boolean): void => {
    for (const file of files) { results[file.at] = err(file); memory.release(object, reusable) }
  }
  try {
    const end = Math.max(...ready.map(f => f.offset + f.length))
    const bytes = await memory.get(object, end, Math.max(end, MAX_OBJECT_BYTES), signal)
    const past = ready.filter(f => f.offset + f.length > bytes.byteLength)
    refuse(past, f => new ContentIntegrityError(`the content record of ${f.init.row.cid.toString()} reads past the end of ${object}: damaged or forged`), true)
    const sent = ready.filter(f => f.offset + f.length <= bytes.byteLength)
    const unsealers = pool.unsealMany(sent.map(f => ({ ...f.job, whole: bytes.range(f.offset, f.length) })), signal)
    for (const [i, file] of sent.entries()) results[file.at] = await answerOf(file, unsealers[i] as Unsealer, object, memory)
  } catch (err) {
    // The pack could not be read. A file answered already released it; the others do now.
    refuse(ready.filter(f => results[f.at] === undefined), () => err as Error, false)
  }
  await Promise.all(ready.map(async (f) => { if (results[f.at] instanceof Error && f.temp !== '') await rm(f.temp, { force: true }) }))
  return results
}

/** One file's answer from its thread: its verified temp, or why not. Its share of the pack is released here. */
async function answerOf (file: Ready, unsealer: Unsealer, object: string, memory: ObjectMemory): Promise<UnsealedFile | Error> {
  const { row } = file.init
  // A buffer given up while a thread may still read it is not reused.
  let reusable = false
  try {
    const written = await unsealer.end()
    reusable = true
    if (written.cid !== row.cid.toString()) return new ContentIntegrityError(`the stored content of ${row.cid.toString()} hashes to ${written.cid}: damaged or forged, nothing written`)
    file.init.onBytes?.(row.size)
    return { job: unsealer.id, temp: file.temp, target: file.init.target, dir: file.dir, expectedDir: file.expectedDir, inode: written.inode, size: row.size, replace: file.init.replace === true }
  } catch (err) {
    return err as Error
  } finally {
    // Its file is gone before this file's answer when it was given up.
    await unsealer.cancel()
    memory.release(object, reusable)
  }
}
