import { HttpFailure } from '../http.js'

/** The most bytes a part's filename may have once decoded, and the most names in it. */
export const MAX_PATH_BYTES = 4096
export const MAX_PATH_DEPTH = 256

const HEX = /^[0-9a-fA-F]{2}$/

/** Go's `url.QueryUnescape`: `+` is a space, `%XX` a byte; undefined when an escape is malformed. */
function queryUnescape (text: string): string | undefined {
  if (!text.includes('%') && !text.includes('+')) return text
  const raw = Buffer.from(text, 'utf8')
  const out = Buffer.allocUnsafe(raw.byteLength)
  let length = 0
  for (let i = 0; i < raw.byteLength; i++) {
    const byte = raw[i] as number
    if (byte === 0x25) {
      const hex = raw.subarray(i + 1, i + 3).toString('latin1')
      if (!HEX.test(hex)) return undefined
      out[length++] = parseInt(hex, 16)
      i += 2
    } else {
      out[length++] = byte === 0x2b ? 0x20 : byte
    }
  }
  return out.subarray(0, length).toString('utf8')
}

/**
 * A part's filename as Kubo reads it (boxo's multipart files): decoded as a query value is (as
 * sent when an escape is malformed), then cleaned as a path under `/`: empty names and `.` dropped,
 * `..` never above the top. Its names in order; none for a part without a name.
 */
export function partPath (filename: string | undefined): string[] {
  const decoded = queryUnescape(filename ?? '') ?? filename ?? ''
  if (Buffer.byteLength(decoded) > MAX_PATH_BYTES) throw new HttpFailure(400, `a part's filename is longer than ${MAX_PATH_BYTES} bytes`)
  const names: string[] = []
  for (const name of decoded.split('/')) {
    if (name === '' || name === '.') continue
    if (name === '..') names.pop()
    else names.push(name)
  }
  if (names.length > MAX_PATH_DEPTH) throw new HttpFailure(400, `a part's filename has more than ${MAX_PATH_DEPTH} levels`)
  return names
}
