import { HttpFailure } from '../http.js'

/** The longest `?filename=` taken: no file system keeps a longer name. */
const MAX_FILENAME = 1024

/** RFC 8187's attr-char: what may stand unencoded in `filename*`. */
const ATTR_CHAR = /[A-Za-z0-9!#$&+\-.^_`|~]/

function extValue (name: string): string {
  return [...new TextEncoder().encode(name)].map(b => {
    const c = String.fromCharCode(b)
    return b < 0x80 && ATTR_CHAR.test(c) ? c : `%${b.toString(16).toUpperCase().padStart(2, '0')}`
  }).join('')
}

/**
 * `filename` as RFC 6266 wants it: a quoted ASCII name (each other character, a quote or a
 * backslash, as `_`), and `filename*` (RFC 8187, UTF-8 percent-encoded) when that lost anything.
 */
function filenameParams (name: string): string {
  const plain = name.replace(/[^\x20-\x7e]|["\\]/g, '_')
  return plain === name ? `filename="${plain}"` : `filename="${plain}"; filename*=UTF-8''${extValue(name)}`
}

/** `?filename=`, checked: at most {@link MAX_FILENAME} characters, no control characters. */
export function requestedFilename (url: URL): string | undefined {
  const name = url.searchParams.get('filename')
  if (name === null || name === '') return undefined
  if (name.length > MAX_FILENAME) throw new HttpFailure(400, `filename is ${name.length} characters long: at most ${MAX_FILENAME}`)
  // Control characters have no place in a name, and a CR or LF none in a header.
  return name.replace(/[\x00-\x1f\x7f]/g, '_')
}

/**
 * `Content-Disposition` of a file: `inline` with `?filename=`, `attachment` with `?download=true`
 * (named by `filename`, else by `fallback`, the path's last segment), none when neither is asked.
 */
export function fileDisposition (url: URL, fallback: string | undefined): string | undefined {
  const filename = requestedFilename(url)
  const download = url.searchParams.get('download') === 'true'
  if (!download) return filename === undefined ? undefined : `inline; ${filenameParams(filename)}`
  const name = filename ?? fallback?.replace(/[\x00-\x1f\x7f]/g, '_')
  return name === undefined ? 'attachment' : `attachment; ${filenameParams(name)}`
}

/** `Content-Disposition` of a raw block or a CAR: always `attachment`, named `<cid>.bin`/`.car` unless `?filename=` says. */
export function trustlessDisposition (url: URL, name: string): string {
  return `attachment; ${filenameParams(requestedFilename(url) ?? name)}`
}
