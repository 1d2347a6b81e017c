/**
 * Where cidsync keeps objects: one {@link ObjectStore} interface, its guarantees written on it,
 * and what every implementation shares (verified reads, a UnixFS file's bytes from its blocks,
 * an export's walk of stored blocks). The service over HTTP lives in remote/, the embedded
 * service in this process in connect/, a plain directory here.
 */
export type {
  ObjectStore, ObjectInfo, DeleteOptions, PutOptions, GetOptions, GetBytesOptions, SlabHashing, GotObject, StoreCallOptions,
  StoreProgressEvent, StreamOptions, BlockSink, BlocksRequest, BlocksOptions, DeletedObjects, DeleteRefusal, ListOptions, StoredUpload, UploadsSeen
} from './object-store.js'
export { sentProgress } from './object-store.js'
export { receiveVerified } from './verified-receive.js'
export type { ByteSource, ReceiveOptions, SourceTry } from './verified-receive.js'
export { fillSlabs, hashed, slabsCid, defaultSlab, TooLarge, DEFAULT_SLAB_BYTES } from './slabs.js'
export { storedFileBytes } from './stored-file.js'
export { storedFileRange } from './stored-range.js'
export type { ByteRange } from './stored-range.js'
export type { ReadStoredBlock, ReadStoredRun } from './stored-file.js'
export { walkStoredObjects, walkStoredBlocks, RUN_BYTES, RUNS_AT_ONCE } from './stored-blocks.js'
export type { StoredBlockSink, WalkObjectsInit, WalkTools } from './stored-blocks.js'
export { BlockHasher } from './block-hasher.js'
export { BlockSlots } from './block-slots.js'
export { DirectoryObjectStore, DIRECTORY_STORE_FORMAT } from './directory-store.js'
export type { CreateStore } from './directory-store.js'
export { openToOthers } from './directory-writers.js'
export { DirectoryPointers, directoryHome } from './directory-pointers.js'
export type { PointerRegistry, StoredPointer, ObjectHome, ServiceHome } from './pointer-registry.js'
export { isServiceHome } from './pointer-registry.js'
export type { NameRegistry, NameKey, NameEntry } from './name-registry.js'
export type { DealRegistry, DealInfo } from './deal-registry.js'
export { registerBackend, unregisterBackend, backends, backendOfKind, mirrorBackend, pathBackend, pathMirror, mirrorLocation, homeFailed, homeAdvice } from './backends.js'
export type { Backend, BackendLocation, HomeTarget, OpenedHome } from './backends.js'
export { directoryBackend } from './directory-backend.js'
