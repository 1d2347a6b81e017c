import { generateKeyPairSync, randomBytes } from 'node:crypto'
import { CID } from 'multiformats/cid'
import { identity } from 'multiformats/hashes/identity'
import { base36 } from 'multiformats/bases/base36'

const LIBP2P_KEY = 0x72

/** A new IPNS key as production makes one: a 32-hex-digit name, an Ed25519 key, its base36 id. */
export function newIpnsKey (): { ipnsName: string, ipnsId: string, privateKey: Buffer } {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519')
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32)
  // libp2p's PublicKey protobuf: Type = Ed25519 (1), Data = the 32 key bytes.
  const encoded = Buffer.concat([Buffer.from([0x08, 0x01, 0x12, 0x20]), raw])
  const ipnsId = CID.createV1(LIBP2P_KEY, identity.digest(encoded)).toString(base36)
  return { ipnsName: randomBytes(16).toString('hex'), ipnsId, privateKey: privateKey.export({ format: 'der', type: 'pkcs8' }) }
}
