/**
 * What a file is, for its `Content-Type` (the path gateway spec's sniffing): by the extension of
 * its name first, then by the magic bytes of common formats, then `text/plain` for UTF-8 text,
 * else `application/octet-stream`. Never HTML from the bytes alone: a page is served as one only
 * when its name says so.
 */

const UTF8 = '; charset=utf-8'

const BY_EXTENSION: Readonly<Record<string, string>> = {
  html: `text/html${UTF8}`,
  htm: `text/html${UTF8}`,
  txt: `text/plain${UTF8}`,
  md: `text/markdown${UTF8}`,
  csv: `text/csv${UTF8}`,
  css: `text/css${UTF8}`,
  js: `text/javascript${UTF8}`,
  mjs: `text/javascript${UTF8}`,
  json: 'application/json',
  xml: 'application/xml',
  svg: 'image/svg+xml',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  avif: 'image/avif',
  ico: 'image/x-icon',
  pdf: 'application/pdf',
  zip: 'application/zip',
  gz: 'application/gzip',
  tar: 'application/x-tar',
  wasm: 'application/wasm',
  mp3: 'audio/mpeg',
  ogg: 'audio/ogg',
  wav: 'audio/wav',
  mp4: 'video/mp4',
  webm: 'video/webm',
  woff: 'font/woff',
  woff2: 'font/woff2',
  car: 'application/vnd.ipld.car'
}

/** The type a name's extension says, or undefined. */
export function typeByName (name: string | undefined): string | undefined {
  const dot = name?.lastIndexOf('.') ?? -1
  if (name === undefined || dot <= 0) return undefined
  return BY_EXTENSION[name.slice(dot + 1).toLowerCase()]
}

type Magic = readonly [offset: number, bytes: readonly number[], type: string]

const ascii = (text: string): number[] => [...text].map(c => c.charCodeAt(0))

const MAGIC: readonly Magic[] = [
  [0, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'image/png'],
  [0, [0xff, 0xd8, 0xff], 'image/jpeg'],
  [0, ascii('GIF87a'), 'image/gif'],
  [0, ascii('GIF89a'), 'image/gif'],
  [8, ascii('WEBP'), 'image/webp'],
  [8, ascii('WAVE'), 'audio/wav'],
  [0, ascii('%PDF-'), 'application/pdf'],
  [0, [0x50, 0x4b, 0x03, 0x04], 'application/zip'],
  [0, [0x1f, 0x8b, 0x08], 'application/gzip'],
  [0, [0x00, 0x61, 0x73, 0x6d], 'application/wasm'],
  [0, ascii('OggS'), 'audio/ogg'],
  [0, ascii('ID3'), 'audio/mpeg'],
  [0, [0x1a, 0x45, 0xdf, 0xa3], 'video/webm'],
  [4, ascii('ftyp'), 'video/mp4']
]

/** Bytes that never occur in text (WHATWG MIME sniffing's binary data bytes). */
const BINARY = /[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f]/

/** The type the file's first bytes show (up to the first 512 are looked at). */
export function typeByBytes (head: Uint8Array): string {
  const sample = head.subarray(0, 512)
  for (const [offset, bytes, type] of MAGIC) {
    if (sample.byteLength >= offset + bytes.length && bytes.every((b, i) => sample[offset + i] === b)) return type
  }
  let text: string
  try {
    // `stream`: a character cut at the sample's end is not an error.
    text = new TextDecoder('utf-8', { fatal: true }).decode(sample, { stream: true })
  } catch {
    return 'application/octet-stream'
  }
  return BINARY.test(text) ? 'application/octet-stream' : `text/plain${UTF8}`
}
