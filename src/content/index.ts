/**
 * Content addressing: the CID a file gets from `ipfs add` under one of three import profiles,
 * computed from a stream with memory bounded by one chunk.
 */
export { CID_PROFILES, CID_PROFILE_NAMES, DEFAULT_CID_PROFILE, cidProfile, isCidProfileName } from './profiles.js'
export type { CidProfile, CidProfileName } from './profiles.js'
export { CidBuilder } from './cid-builder.js'
export type { CidBuilderInit } from './cid-builder.js'
export type { TreeLink } from './unixfs-tree.js'
export { directoryNode, estimatedDirectorySize, HAMT_THRESHOLD_BYTES } from './unixfs-dir.js'
export type { DirectoryEntry, DirectoryNode } from './unixfs-dir.js'
export { fileCid, fileCidSync, smallFileCidSync, allocateHashBuffers, bytesCid, FileChangedWhileHashingError, NotAFileError, statTuple } from './file-cid.js'
export type { FileCid, HashBuffers, StatTuple } from './file-cid.js'
export { checkBlock } from './block-check.js'
export { flatCidText } from './cid-text.js'
export { planSegments, segmentDigestsSync, assembleCid } from './segment-cid.js'
export type { FileSegment } from './segment-cid.js'
export { boundCarSections, CarSectionError, MAX_CAR_HEADER_BYTES } from './car-sections.js'
export { CarV1Reader, ChunkSource, fileSource } from './car-v1-reader.js'
export type { CarByteSource, CarSection } from './car-v1-reader.js'
export { decodeFileNode } from './file-node.js'
export type { FileNode } from './file-node.js'
export { ObjectBlocksRecorder } from './object-blocks.js'
export type { ObjectBlocks } from './object-blocks.js'
