import { createCipheriv, createHash } from 'node:crypto'

/**
 * The deterministic byte stream the published multi-chunk CID vectors are made from: the ChaCha20
 * keystream under key SHA-256(seed) and an all-zero 16-byte IV, cut to `length`.
 */
export function chachaBytes (seed: string, length: number): Buffer {
  const key = createHash('sha256').update(seed).digest()
  const cipher = createCipheriv('chacha20', key, Buffer.alloc(16))
  return cipher.update(Buffer.alloc(length))
}
