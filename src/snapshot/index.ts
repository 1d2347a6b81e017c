/**
 * What a publish stores (docs/snapshot-format.md): sealed files (compressed, AES-256-GCM under an
 * authenticated header) holding `cidsync-sqlite/2` segments and manifests, or a whole
 * `cidsync-sqlite/1` index; and their key, random per state dir or from a passphrase. Content
 * index objects (docs/content-format.md) are sealed the same way, under a kind of their own.
 */
export { writeSnapshot } from './write-snapshot.js'
export type { WriteSnapshotInit, WrittenSnapshot } from './write-snapshot.js'
export { readSnapshot, readSnapshotHeader } from './read-snapshot.js'
export type { ReadSnapshotInit } from './read-snapshot.js'
export { seal, unseal, readSealedHeader, BROTLI_QUALITY } from './sealed-file.js'
export type { Sealed, SealInit, UnsealInit } from './sealed-file.js'
export { sealSegment, openSegment, unsealSegment, segmentInflateBound } from './segment-file.js'
export { publishFetchBound, inflateBound, MAX_SEALED_MANIFEST_BYTES, PUBLISH_PREFIX_BYTES, MIN_INFLATE_BOUND, MAX_INFLATE_BOUND } from './size-bounds.js'
export type { SealSegmentInit, OpenSegmentInit, UnsealSegmentInit } from './segment-file.js'
export { sealManifest, openManifest, parseManifest, checkChains, deviceChainSchema, MAX_MANIFEST_BYTES, MAX_MARKS, MAX_MARK_LENGTH, MAX_REPLACED, marksProblem } from './manifest.js'
export type { Manifest, DeviceChain, SegmentRef, SealManifestInit, OpenManifestInit } from './manifest.js'
export { ENGINE, ENGINE_V1, READABLE_ENGINES, FORMAT_VERSION, MAGIC, MAX_SEQUENCE, MAX_CONTENT_INDEX_RECORDS, MAX_PRUNE_LIST_OBJECTS } from './format.js'
export type { SnapshotHeader, SegmentHeader, ManifestHeader, ContentIndexHeader, SealedHeader, SegmentSpan } from './format.js'
export { sealContentIndex, joinRecordTexts, openContentIndex, isContentIndexHeader, CONTENT_INDEX_VERSION, CONTENT_INDEX_SPLIT_BYTES, MAX_CONTENT_INDEX_BYTES, MAX_SEALED_CONTENT_INDEX_BYTES } from './content-index-file.js'
export type { ContentIndexBody, SealContentIndexInit, OpenContentIndexInit, JoinedRecordTexts } from './content-index-file.js'
export { sealPruneList, openPruneList, isPruneListHeader, MAX_SEALED_PRUNE_LIST_BYTES } from './prune-list-file.js'
export type { SealPruneListInit, OpenPruneListInit } from './prune-list-file.js'
export { exportKey, importKey, keyIdOf, writingKey, readingKey, KEY_FILE } from './key.js'
export type { SnapshotKey } from './key.js'
export { chainNodes, fanoutTree, isPlainNode, publishNode, rootPublish, segmentLinks, ROOT_FANOUT, ROOT_LINKS, ROOT_SHAPE } from './plain-root.js'
export type { ChainPublish, PublishLinks, RootBlock, RootLink, RootNode } from './plain-root.js'
