import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto'
import { privateKeyFromRaw } from '@libp2p/crypto/keys'
import { base36 } from 'multiformats/bases/base36'
import { ServiceDataDamagedError } from '../errors.js'

/** An Ed25519 key as libp2p holds it: it signs IPNS records. */
export type SigningKey = ReturnType<typeof privateKeyFromRaw>

/**
 * A new IPNS key as production makes one: a 32-hex-digit name, an Ed25519 key, and its IPNS name
 * (`ipnsId`). The key is kept as PKCS#8 DER, as every version of this service kept it.
 */
export function newIpnsKey (): { ipnsName: string, ipnsId: string, privateKey: Buffer } {
  const privateKey = generateKeyPairSync('ed25519').privateKey.export({ format: 'der', type: 'pkcs8' })
  return { ipnsName: randomBytes(16).toString('hex'), ipnsId: ipnsIdOf(signingKey(privateKey)), privateKey }
}

/** A stored key (PKCS#8 DER) as the libp2p key that signs its records. Throws when it is not an Ed25519 key. */
export function signingKey (der: Uint8Array): SigningKey {
  const key = createPrivateKey({ key: Buffer.from(der), format: 'der', type: 'pkcs8' })
  if (key.asymmetricKeyType !== 'ed25519') throw new ServiceDataDamagedError(`a stored IPNS key is ${key.asymmetricKeyType ?? 'of no known type'}, not Ed25519: the service's database is damaged; restore it from a backup`)
  // libp2p takes an Ed25519 key as its 32-byte seed and then its 32-byte public key.
  const seed = key.export({ format: 'der', type: 'pkcs8' }).subarray(-32)
  const publicKey = createPublicKey(key).export({ format: 'der', type: 'spki' }).subarray(-32)
  return privateKeyFromRaw(Buffer.concat([seed, publicKey]))
}

/** The IPNS name a key signs for: its peer id as a libp2p-key CIDv1 in base36 (`k51...`). */
export function ipnsIdOf (key: SigningKey): string {
  return key.publicKey.toCID().toString(base36)
}
