/** What a CAR header may take: its roots, far past any CAR cidsync or Kubo writes. */
export const MAX_CAR_HEADER_BYTES = 1024 * 1024

/** Room for a section's CID in front of its block. */
const CID_ROOM = 4096

/** CARv2's pragma as it appears on the wire: length 10, then `{version: 2}` in dag-cbor. */
export const V2_PRAGMA = Uint8Array.of(0xa1, 0x67, 0x76, 0x65, 0x72, 0x73, 0x69, 0x6f, 0x6e, 0x02)
const V2_FIXED_HEADER = 40

/** A CAR whose framing announces more than the caller takes: refused as its length is read. */
export class CarSectionError extends Error {}

/**
 * Passes a CAR stream through unchanged while reading its framing, and throws as soon as a length
 * prefix announces a header or section larger than allowed. `@ipld/car`'s reader buffers a
 * section whole before handing it over, so without this a hostile CAR announcing a block of a
 * gigabyte holds the reader (and its memory) for as long as the sender trickles it. CARv2 is
 * followed to its data payload; its index (after the payload) passes unread.
 */
export async function * boundCarSections (source: AsyncIterable<Uint8Array>, maxBlockBytes: number): AsyncGenerator<Uint8Array> {
  const maxSection = maxBlockBytes + CID_ROOM
  let phase: 'length' | 'skip' | 'v2-fixed' | 'pass' = 'length'
  let varint = 0
  let varintBytes = 0
  let skip = 0
  let sections = 0 // lengths read in the current CARv1 payload (the first is its header's)
  let v2: { fixed: number[] } | undefined
  let captured: number[] | undefined // the first header's bytes, to recognise CARv2's pragma
  let budget = Infinity // bytes left of a CARv2's payload
  let offset = 0 // bytes of the stream read so far
  for await (const chunk of source) {
    for (let i = 0; i < chunk.byteLength && phase !== 'pass';) {
      if (offset >= budget) { phase = 'pass'; break }
      const byte = chunk[i] as number
      if (phase === 'skip') {
        const n = Math.min(skip, chunk.byteLength - i, budget - offset)
        if (captured !== undefined) captured.push(...chunk.subarray(i, i + n))
        skip -= n; i += n; offset += n
        if (skip === 0) {
          phase = 'length'
          if (captured !== undefined && sections === 1 && v2 === undefined && captured.length === V2_PRAGMA.length && captured.every((b, j) => b === V2_PRAGMA[j])) {
            v2 = { fixed: [] }
            phase = 'v2-fixed'
          }
          captured = undefined
        }
        continue
      }
      i++; offset++
      if (phase === 'v2-fixed') {
        const fixed = (v2 as { fixed: number[] }).fixed
        fixed.push(byte)
        if (fixed.length < V2_FIXED_HEADER) continue
        const view = Buffer.from(fixed)
        const dataOffset = Number(view.readBigUInt64LE(16))
        const dataSize = Number(view.readBigUInt64LE(24))
        if (dataOffset < offset) throw new CarSectionError(`CARv2 data offset ${dataOffset} points inside its own header`)
        skip = dataOffset - offset
        budget = dataOffset + dataSize
        sections = 0
        phase = skip === 0 ? 'length' : 'skip'
        continue
      }
      varint += (byte & 0x7f) * 2 ** (7 * varintBytes++)
      if ((byte & 0x80) !== 0) {
        if (varintBytes >= 9) throw new CarSectionError('a CAR length prefix longer than 9 bytes')
        continue
      }
      const length = varint
      varint = 0
      varintBytes = 0
      const header = sections === 0
      sections++
      if (header && length > MAX_CAR_HEADER_BYTES) throw new CarSectionError(`the CAR header announces ${length} bytes, more than the ${MAX_CAR_HEADER_BYTES} taken`)
      if (!header && length > maxSection) throw new CarSectionError(`a CAR section announces ${length} bytes, more than a block of ${maxBlockBytes} bytes and its CID`)
      if (header && v2 === undefined && length === V2_PRAGMA.length) captured = []
      skip = length
      if (skip > 0) phase = 'skip'
    }
    yield chunk
  }
}
