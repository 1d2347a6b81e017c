import { CarWriter } from '@ipld/car'
import type { CID } from 'multiformats/cid'

/** A CAR v1 of `blocks` under `roots`, whole in memory (tests' CARs are small). */
export async function carOf (roots: CID[], blocks: ReadonlyArray<{ cid: CID, bytes: Uint8Array }>): Promise<Uint8Array> {
  const { writer, out } = CarWriter.create(roots)
  const chunks: Uint8Array[] = []
  const collected = (async () => { for await (const chunk of out) chunks.push(chunk) })()
  for (const block of blocks) await writer.put(block)
  await writer.close()
  await collected
  return Buffer.concat(chunks)
}
