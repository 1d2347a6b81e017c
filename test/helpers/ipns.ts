import { multihashToIPNSRoutingKey, unmarshalIPNSRecord, type IPNSRecord } from 'ipns'
import { ipnsValidator } from 'ipns/validator'
import { base36 } from 'multiformats/bases/base36'
import { CID } from 'multiformats/cid'
import type { MultihashDigest } from 'multiformats/hashes/interface'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { cidProfile } from '../../src/content/index.js'
import type { ServiceClients } from '../../src/remote/index.js'

/** The media type of a signed IPNS record. */
export const RECORD_TYPE = 'application/vnd.ipfs.ipns-record'

/**
 * A record checked with the `ipns` package alone, as any IPNS client checks it (none of cidsync's
 * code): signed by the key the name is made from, unexpired. Throws otherwise.
 */
export async function checkedRecord (name: string, bytes: Uint8Array): Promise<IPNSRecord> {
  const cid = CID.parse(name, base36)
  if (cid.code !== 0x72) throw new Error(`${name} is not a libp2p-key CID`)
  await ipnsValidator(multihashToIPNSRoutingKey(cid.multihash as MultihashDigest<0x00 | 0x12>), bytes)
  return unmarshalIPNSRecord(bytes)
}

/** A file with `text` uploaded to the service: its CID. */
export async function uploaded (clients: ServiceClients, dir: string, file: string, text: string): Promise<string> {
  await writeFile(join(dir, file), text)
  return (await clients.objects.put(join(dir, file), cidProfile('kubo-cidv1'))).cid
}
