/**
 * Content custody: what cidsync stores of a file's bytes and how it reads them back
 * (docs/content-format.md). Sealing is convergent under the user's key: equal files seal to equal
 * bytes on every device that shares the key, and to nothing anyone else can open or confirm.
 * Small files travel in packs, large ones in parts; every file that comes back is hashed to its
 * row's CID before it takes the place of anything.
 */
export { contentMasterKey, fileKey } from './content-key.js'
export { CHUNK_BYTES, TAG_BYTES, chunkCount, sealedSize, plainChunkLength, sealChunk, openChunk, openChunkPieces } from './chunks.js'
export { sealStream, openStream } from './seal-stream.js'
export type { SealedChunk, SealStreamInit, OpenStreamInit } from './seal-stream.js'
export { SMALL_FILE_BYTES, PACK_MAX_BYTES, PACK_MAX_BLOBS, PART_CHUNKS } from './layout.js'
export { contentRecordSchema, objectCidsOf, parseContentRecord, SEALINGS } from './record.js'
export type { ContentRecord, Sealing } from './record.js'
export type { FileToStore } from './file-to-store.js'
export { ContentStorer } from './content-storer.js'
export type { ContentStorerComponents, ContentStorerInit, ContentStorerProgress, ContentSealingKey } from './content-storer.js'
export { ObjectCache } from './object-cache.js'
export type { FetchObject } from './object-cache.js'
export { fetchFile, removeFetchTemps, fetchTempFor, renameInto } from './fetch-file.js'
export { utimesTime } from './mtime.js'
export type { FileAttrs } from './file-attrs.js'
export { ObjectMemory, HeldObject, SLAB_BYTES } from './object-memory.js'
export type { FetchObjectBytes } from './object-memory.js'
export { unsealFile } from './unseal-file.js'
export { unsealPackFiles } from './unseal-pack.js'
export { DurableBatch } from './durable-batch.js'
export type { UnsealedFile, BatchLimits } from './durable-batch.js'
export type { UnsealFileInit } from './unseal-file.js'
export { SealPool } from './seal-pool.js'
export { MAX_OBJECT_BYTES } from './layout.js'
export type { FetchFileInit, FileRow } from './fetch-file.js'
export { TokenBucket, Slots, processUploadGate } from './upload-gate.js'
export type { UploadGate } from './upload-gate.js'
