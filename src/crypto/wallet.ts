import { secp256k1 } from '@noble/curves/secp256k1.js'
import { keccak_256 } from '@noble/hashes/sha3.js'
import { randomBytes } from 'node:crypto'
import { UsageError } from '../errors.js'

/**
 * Ethereum wallet signatures as the deal service checks them: EIP-191 `personal_sign` over
 * secp256k1, the signer named by its address (`0x` + 40 hex, lowercase here).
 */

const encoder = new TextEncoder()

function hex (bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex')
}

/** keccak256("\x19Ethereum Signed Message:\n" + byte length + message): what personal_sign signs. */
export function personalMessageHash (message: string): Uint8Array {
  const body = encoder.encode(message)
  const prefix = encoder.encode(`\x19Ethereum Signed Message:\n${body.byteLength}`)
  const whole = new Uint8Array(prefix.byteLength + body.byteLength)
  whole.set(prefix)
  whole.set(body, prefix.byteLength)
  return keccak_256(whole)
}

/** Parses a wallet key given as 64 hex digits, with or without `0x`. */
export function parseWalletKey (text: string): Uint8Array {
  const clean = text.trim().replace(/^0x/i, '')
  if (!/^[0-9a-fA-F]{64}$/.test(clean)) throw new UsageError('the wallet key must be 64 hex digits (32 bytes), with or without 0x')
  const key = Uint8Array.from(Buffer.from(clean, 'hex'))
  if (!secp256k1.utils.isValidSecretKey(key)) throw new UsageError('the wallet key is not a valid secp256k1 key')
  return key
}

export function newWalletKey (): Uint8Array {
  for (;;) {
    const key = Uint8Array.from(randomBytes(32))
    if (secp256k1.utils.isValidSecretKey(key)) return key
  }
}

export function formatWalletKey (key: Uint8Array): string {
  return `0x${hex(key)}`
}

function addressOfPublicKey (publicKey: Uint8Array): string {
  const uncompressed = secp256k1.Point.fromBytes(publicKey).toBytes(false)
  return `0x${hex(keccak_256(uncompressed.subarray(1)).subarray(12))}`
}

/** The wallet's address, lowercase, as the service stores it. */
export function walletAddress (key: Uint8Array): string {
  return addressOfPublicKey(secp256k1.getPublicKey(key, false))
}

/** personal_sign: `0x` + r (32 bytes) + s (32) + v (27 or 28), as wallets give it. */
export function personalSign (message: string, key: Uint8Array): string {
  const recovered = secp256k1.sign(personalMessageHash(message), key, { prehash: false, format: 'recovered' })
  const v = 27 + (recovered[0] as number)
  return `0x${hex(recovered.subarray(1))}${v.toString(16)}`
}

/** The address that signed `message`, or undefined for a signature that is malformed or recovers nothing. */
export function recoverSigner (message: string, signature: string): string | undefined {
  const clean = signature.trim().replace(/^0x/i, '')
  if (!/^[0-9a-fA-F]{130}$/.test(clean)) return undefined
  const bytes = Buffer.from(clean, 'hex')
  const v = bytes[64] as number
  const recovery = v >= 27 ? v - 27 : v
  if (recovery !== 0 && recovery !== 1) return undefined
  const recovered = new Uint8Array(65)
  recovered[0] = recovery
  recovered.set(bytes.subarray(0, 64), 1)
  try {
    return addressOfPublicKey(secp256k1.recoverPublicKey(recovered, personalMessageHash(message), { prehash: false }))
  } catch {
    return undefined
  }
}
