import { CidBuilder } from '../content/index.js'

/** Bytes that would pass the caller's bound: not the object the caller was told of. */
export class TooLarge extends Error {}

/** `chunks` as they come, each added to `builder` first. */
export async function * hashed (chunks: AsyncIterable<Uint8Array>, builder: CidBuilder): AsyncGenerator<Uint8Array> {
  for await (const chunk of chunks) {
    builder.update(chunk)
    yield chunk
  }
}

/**
 * Copies `chunks` into slabs `slab` gives (each filled before the next; the last cut to what it
 * holds), refusing past `maxBytes` ({@link TooLarge}) before copying what would pass it.
 * `onSlab` is told of each slab once it is full, and of the last as cut.
 */
export async function fillSlabs (chunks: AsyncIterable<Uint8Array>, maxBytes: number, slab: () => Uint8Array, onProgress?: (received: number) => void, onSlab?: (filled: Uint8Array) => void): Promise<Uint8Array[]> {
  const filled: Uint8Array[] = []
  let current: Uint8Array | undefined
  let at = 0
  let received = 0
  for await (const chunk of chunks) {
    if (received + chunk.byteLength > maxBytes) throw new TooLarge()
    for (let offset = 0; offset < chunk.byteLength;) {
      if (current === undefined) {
        current = slab()
        at = 0
      }
      const take = Math.min(current.byteLength - at, chunk.byteLength - offset)
      current.set(offset === 0 && take === chunk.byteLength ? chunk : chunk.subarray(offset, offset + take), at)
      at += take
      offset += take
      if (at === current.byteLength) {
        filled.push(current)
        onSlab?.(current)
        current = undefined
      }
    }
    received += chunk.byteLength
    onProgress?.(received)
  }
  if (current !== undefined) {
    const last = current.subarray(0, at)
    filled.push(last)
    onSlab?.(last)
  }
  return filled
}

/** Slabs a read into memory fills when its caller gives none. */
export const DEFAULT_SLAB_BYTES = 4 * 1024 * 1024

/** A fresh shared slab of {@link DEFAULT_SLAB_BYTES}. */
export const defaultSlab = (): Uint8Array => new Uint8Array(new SharedArrayBuffer(DEFAULT_SLAB_BYTES))

/** Hashes `filled` under `builder`'s profile when no `hash` is given; answers the CID's text. */
export async function slabsCid (filled: readonly Uint8Array[], builder: CidBuilder, hash?: (slabs: readonly Uint8Array[]) => Promise<string>): Promise<string> {
  if (hash !== undefined) return await hash(filled)
  for (const bytes of filled) builder.update(bytes)
  return builder.finish().toString()
}
