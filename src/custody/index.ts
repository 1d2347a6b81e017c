/**
 * Content custody: what cidsync stores of a file's bytes and how it reads them back
 * (docs/content-format.md). Sealing is convergent under the user's key: equal files seal to equal
 * bytes on every device that shares the key, and to nothing anyone else can open or confirm.
 */
export { contentMasterKey, fileKey } from './content-key.js'
export { CHUNK_BYTES, TAG_BYTES, chunkCount, sealedSize, plainChunkLength, sealChunk, openChunk } from './chunks.js'
export { sealStream, openStream } from './seal-stream.js'
export type { SealedChunk, SealStreamInit, OpenStreamInit } from './seal-stream.js'
