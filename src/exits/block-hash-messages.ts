/** A block's memory (the whole buffer it lies in), transferred to the hashing thread. */
export interface HashJob { readonly id: number, readonly buffer: ArrayBuffer, readonly offset: number, readonly length: number }
/** The same memory transferred back, with the SHA-256 of the block in it. */
export interface HashAnswer { readonly id: number, readonly buffer: ArrayBuffer, readonly digest: ArrayBuffer }
