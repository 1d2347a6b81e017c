/**
 * Blocks' memory (the whole buffer they lie in), transferred to the hashing thread: `ranges` holds
 * each block's offset and length in turn.
 */
export interface HashJob { readonly id: number, readonly buffer: ArrayBuffer, readonly ranges: readonly number[] }
/** The same memory transferred back, with the SHA-256 of each block in turn (32 bytes each). */
export interface HashAnswer { readonly id: number, readonly buffer: ArrayBuffer, readonly digests: ArrayBuffer }
