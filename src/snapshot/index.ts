/**
 * The snapshot file (engine `cidsync-sqlite/1`): a consistent copy of the index, gzip, AES-256-GCM
 * under an authenticated header; and its key, random per state dir or from a passphrase.
 */
export { writeSnapshot, DEFAULT_COMPRESSION_LEVEL, LOCAL_ONLY_TABLES } from './write-snapshot.js'
export type { WriteSnapshotInit, WrittenSnapshot } from './write-snapshot.js'
export { readSnapshot, readSnapshotHeader, inflateBound, MIN_INFLATE_BOUND, MAX_INFLATE_BOUND } from './read-snapshot.js'
export type { ReadSnapshotInit } from './read-snapshot.js'
export { ENGINE, FORMAT_VERSION, MAGIC } from './format.js'
export type { SnapshotHeader } from './format.js'
export { exportKey, importKey, keyIdOf, writingKey, readingKey, KEY_FILE } from './key.js'
export type { SnapshotKey } from './key.js'
