import { CHUNK_BYTES, TAG_BYTES } from './chunks.js'

/** Files below this are packed with others; from it on, stored in parts of their own. */
export const SMALL_FILE_BYTES = CHUNK_BYTES
/** A pack is uploaded once it would pass this many bytes... */
export const PACK_MAX_BYTES = 16 * 1024 * 1024
/** ...or hold this many blobs. */
export const PACK_MAX_BLOBS = 4096
/** Sealed chunks per part: at most 64 MiB of a file is lost to a kill or an outage. */
export const PART_CHUNKS = 64
/** The largest object cidsync writes (a whole part); a fetch of a sealed object stops past it. */
export const MAX_OBJECT_BYTES = PART_CHUNKS * (CHUNK_BYTES + TAG_BYTES)
