import { testKnob } from '../util/test-knob.js'
import { CHUNK_BYTES, TAG_BYTES } from './chunks.js'

/*
 * Test-only: crash and fault tests shrink parts and packs (`CIDSYNC_TEST_PART_CHUNKS`,
 * `CIDSYNC_TEST_PACK_BLOBS`) so a file of a few MiB spans many parts and a few hundred small
 * files many packs, and twenty kills stay quick. Only writing is affected: a record says where
 * each blob lies, so content stored with any part size reads back the same.
 */

/** Files below this are packed with others; from it on, stored in parts of their own. */
export const SMALL_FILE_BYTES = CHUNK_BYTES
/** A pack is uploaded once it would pass this many bytes... */
export const PACK_MAX_BYTES = 16 * 1024 * 1024
/** ...or hold this many blobs. */
export const PACK_MAX_BLOBS = testKnob('CIDSYNC_TEST_PACK_BLOBS', 4096)
/** Sealed chunks per part as the format fixes them. */
const FORMAT_PART_CHUNKS = 64
/** Sealed chunks per part: at most 64 MiB of a file is lost to a kill or an outage. */
export const PART_CHUNKS = testKnob('CIDSYNC_TEST_PART_CHUNKS', FORMAT_PART_CHUNKS)
/** The largest object cidsync writes (a whole part); a fetch of a sealed object stops past it. */
export const MAX_OBJECT_BYTES = FORMAT_PART_CHUNKS * (CHUNK_BYTES + TAG_BYTES)
