import { onTestFinished } from 'vitest'
import { randomBytes } from 'node:crypto'
import { readdirSync, statSync } from 'node:fs'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createServiceClients } from '../../src/remote/index.js'
import { cidProfile } from '../../src/content/index.js'
import { newWalletKey, walletAddress } from '../../src/crypto/index.js'

const profile = cidProfile('kubo-cidv1')

/** One account on a local service, as a test of its uploads and deletes uses it. */
export interface ServiceAccount {
  readonly apiKey: string
  readonly address: string
  /** Uploads `bytes` as a file (UnixFS, 256 KiB raw leaves); answers its CID. */
  put: (bytes: Buffer) => Promise<string>
  /** Fetches a file back through the gateway, every block checked against its CID. */
  get: (cid: string) => Promise<Buffer>
  /** Deletes this account's upload of `cid` with `delete_file`, as production's clients do. */
  remove: (cid: string) => Promise<void>
  /** `user_data_usage`'s `dataUsed`. */
  used: () => Promise<number>
}

/** A new account on `local` (a service, or its thread: its URL), signed up with a fresh wallet; its files go through `work`. */
export async function serviceAccount (local: { readonly url: string }, work: string): Promise<ServiceAccount> {
  let apiKey: string | undefined
  const url = local.url
  const clients = createServiceClients({ dealUrl: url, apiUrl: url, pointerUrl: url, uploadUrl: url, gateways: [url] }, { apiKey: () => apiKey, sessionToken: () => undefined }, { retry: { baseDelayMs: 10, maxDelayMs: 50, attempts: 1 } })
  onTestFinished(async () => { await clients.close() })
  const wallet = newWalletKey()
  apiKey = (await clients.deals.login(wallet)).apiKey
  const key = apiKey
  const mine = randomBytes(4).toString('hex')
  let n = 0
  const api = async (method: string, path: string): Promise<unknown> => {
    const res = await fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${key}` } })
    if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`)
    return await res.json()
  }
  return {
    apiKey: key,
    address: walletAddress(wallet),
    put: async bytes => {
      const path = join(work, `in-${mine}-${n++}.bin`)
      await writeFile(path, bytes)
      return (await clients.objects.put(path, profile)).cid
    },
    get: async cid => {
      const path = join(work, `out-${mine}-${n++}.bin`)
      await clients.objects.getFile(cid, profile, path)
      return await readFile(path)
    },
    remove: async cid => {
      const page = await api('GET', '/api/user/files_uploaded?lastKey=null') as { fileList: Array<{ id: string, cid: string }> }
      const record = page.fileList.find(file => file.cid === cid)
      if (record === undefined) throw new Error(`no upload of ${cid} in this account`)
      await api('DELETE', `/api/user/delete_file?id=${encodeURIComponent(record.id)}`)
    },
    used: async () => (await api('GET', '/api/user/user_data_usage') as { dataUsed: number }).dataUsed
  }
}

/** The service's pack files and their sizes. */
export function packFiles (serviceDir: string): Map<string, number> {
  const packs = join(serviceDir, 'packs')
  return new Map(readdirSync(packs).map(name => [name, statSync(join(packs, name)).size]))
}

/** The bytes of every pack file together. */
export function packBytes (serviceDir: string): number {
  return [...packFiles(serviceDir).values()].reduce((a, b) => a + b, 0)
}
