import { describe, it, expect, onTestFinished } from 'vitest'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import lighthouse from '@lighthouse-web3/sdk'
import { lighthouseConfig } from '@lighthouse-web3/sdk/dist/lighthouse.config.js'
import { Wallet } from 'ethers'
import { request } from 'undici'
import { bytesCid, cidProfile } from '../../src/content/index.js'
import { startLocalService, type LocalService } from '../../src/local-service/index.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { unixfsTree } from '../helpers/unixfs-tree.js'

/**
 * The storage service's official SDK (`@lighthouse-web3/sdk`), unchanged, against the local
 * service on loopback. Its hosts are constants in one exported object (`lighthouseConfig`, which
 * every SDK call reads when it runs), with no setting or variable to change them: the test points
 * them at the local service for its length and puts them back after.
 */
async function sdkOn (quota: number): Promise<LocalService> {
  const dir = await useTempDir()
  const local = await startLocalService({ dir, dealDelayMs: 0, policy: { allow: [], maxBytesPerAccount: quota, maxIpnsKeysPerAccount: 0 } })
  const before = { api: lighthouseConfig.lighthouseAPI, node: lighthouseConfig.lighthouseNode }
  lighthouseConfig.lighthouseAPI = local.url
  lighthouseConfig.lighthouseNode = local.url
  onTestFinished(async () => {
    lighthouseConfig.lighthouseAPI = before.api
    lighthouseConfig.lighthouseNode = before.node
    await local.stop()
  })
  return local
}

/** An API key as the SDK's own `api-key --new` gets one: the message from the main API, signed by an ethers wallet. */
async function apiKeyOf (local: LocalService, wallet: Pick<Wallet, 'address' | 'signMessage'>): Promise<string> {
  const answer = await request(`${local.url}/api/auth/get_message?publicKey=${wallet.address}`)
  const message = await answer.body.json() as string
  const { data } = await lighthouse.getApiKey(wallet.address, await wallet.signMessage(message))
  return data.apiKey
}

const QUOTA = 1024 * 1024
const FOLDER = 'Fotos-été'
const FOLDER_FILES: Record<string, string> = {
  'a.txt': 'top level',
  'sub/ñandú ü.txt': 'nested, with a non-ASCII name',
  'sub/deeper/b.bin': 'two levels down'
}

describe('the storage service\'s SDK works against the local service', () => {
  it('signs in with a wallet, uploads a file and a folder, lists, reads info, usage and deals, deletes', async () => {
    const local = await sdkOn(QUOTA)
    const wallet = Wallet.createRandom()
    const apiKey = await apiKeyOf(local, wallet)
    expect(apiKey).toMatch(/^[0-9a-f-]{36}$/)

    const dir = await useTempDir()
    await writeFile(join(dir, 'hello.txt'), 'hello from the SDK')
    const file = (await lighthouse.upload(join(dir, 'hello.txt'), apiKey)).data
    const fileCid = bytesCid(Buffer.from('hello from the SDK'), cidProfile('kubo-cidv1')).toString()
    expect(file).toEqual({ Name: 'hello.txt', Hash: fileCid, Size: expect.stringMatching(/^\d+$/) })

    for (const [path, text] of Object.entries(FOLDER_FILES)) {
      await mkdir(join(dir, FOLDER, path, '..'), { recursive: true })
      await writeFile(join(dir, FOLDER, path), text)
    }
    const folder = (await lighthouse.upload(join(dir, FOLDER), apiKey)).data
    const tree = await unixfsTree(Object.fromEntries(Object.entries(FOLDER_FILES).map(([p, t]) => [p, Buffer.from(t)])))
    expect(folder).toEqual({ Name: FOLDER, Hash: tree.root.toString(), Size: expect.stringMatching(/^\d+$/) })
    const nested = await request(`${local.url}/ipfs/${folder.Hash}/${encodeURIComponent('sub')}/${encodeURIComponent('ñandú ü.txt')}`)
    expect(await nested.body.text()).toBe(FOLDER_FILES['sub/ñandú ü.txt'])

    const folderBytes = Object.values(FOLDER_FILES).reduce((sum, t) => sum + Buffer.byteLength(t), 0)
    const uploads = (await lighthouse.getUploads(apiKey)).data
    expect(uploads.totalFiles).toBe(2)
    expect(uploads.fileList.map(r => [r.fileName, r.cid, r.fileSizeInBytes, r.mimeType])).toEqual([
      [FOLDER, folder.Hash, String(folderBytes), 'application/x-directory'],
      ['hello.txt', fileCid, '18', 'application/octet-stream']
    ])

    expect((await lighthouse.getFileInfo(folder.Hash)).data).toEqual({ fileSizeInBytes: String(folderBytes), cid: folder.Hash, encryption: false, fileName: FOLDER, mimeType: 'application/x-directory' })
    expect((await lighthouse.getBalance(apiKey)).data).toEqual({ dataLimit: QUOTA, dataUsed: folderBytes + 18 })

    expect((await lighthouse.dealStatus(fileCid)).data).toEqual([])
    const asked = await request(`${local.url}/api/v1/pin/add_cid?cid=${fileCid}`, { headers: { authorization: `Bearer ${apiKey}` } })
    expect(asked.statusCode).toBe(200)
    await asked.body.dump()
    const deals = (await lighthouse.dealStatus(fileCid)).data as unknown as Array<Record<string, unknown>>
    expect(deals).toHaveLength(1)
    expect(deals[0]).toMatchObject({ dealStatus: 'Active', pieceCID: expect.any(String) })

    const id = uploads.fileList.find(r => r.cid === fileCid)?.id as string
    expect((await lighthouse.deleteFile(apiKey, id)).data).toEqual({ message: 'File deleted successfully' })
    const after = (await lighthouse.getUploads(apiKey)).data
    expect(after.fileList.map(r => r.cid)).toEqual([folder.Hash])
    expect(after.totalFiles).toBe(1)
    // Still held, so still counted: an account cannot add and delete its way past its quota.
    expect((await lighthouse.getBalance(apiKey)).data.dataUsed).toBe(folderBytes + 18)
    await expect(lighthouse.getFileInfo(fileCid)).rejects.toThrow('HTTP error! status: 404')
    await expect(lighthouse.deleteFile(apiKey, id)).rejects.toThrow('Request failed with status code 404')
    // The bytes stay stored, and served by CID, until space is reclaimed (docs/local-service.md).
    const still = await request(`${local.url}/ipfs/${fileCid}`)
    expect(await still.body.text()).toBe('hello from the SDK')
  })

  it('shows a 401 for a bad key, and refuses a key for another wallet\'s signature', async () => {
    const local = await sdkOn(QUOTA)
    const dir = await useTempDir()
    await writeFile(join(dir, 'x.txt'), 'x')
    await expect(lighthouse.upload(join(dir, 'x.txt'), 'not-a-key')).rejects.toThrow('Request failed with status code 401')
    await expect(lighthouse.getUploads('not-a-key')).rejects.toThrow('Request failed with status code 401')
    await expect(lighthouse.getBalance('not-a-key')).rejects.toThrow('Request failed with status code 401')
    await expect(lighthouse.deleteFile('not-a-key', 'any-id')).rejects.toThrow('Request failed with status code 401')

    const owner = Wallet.createRandom()
    const message = await (await request(`${local.url}/api/auth/get_message?publicKey=${owner.address}`)).body.json() as string
    // The SDK's getApiKey loses the service's answer on failure (it reads `error.response.data` of a fetch error): only the rejection shows.
    await expect(lighthouse.getApiKey(owner.address, await Wallet.createRandom().signMessage(message))).rejects.toThrow()
    expect(local.requestLog().filter(r => r.route === 'auth_create_api_key').map(r => r.status)).toEqual([401])
    // The message is still open for its own wallet.
    expect((await lighthouse.getApiKey(owner.address, await owner.signMessage(message))).data.apiKey).toMatch(/^[0-9a-f-]{36}$/)
  })

  it('uploads a folder given with a trailing slash, named as the folder', async () => {
    const local = await sdkOn(QUOTA)
    const apiKey = await apiKeyOf(local, Wallet.createRandom())
    const dir = await useTempDir()
    await mkdir(join(dir, 'docs', 'x'), { recursive: true })
    await writeFile(join(dir, 'docs', 'x', 'y.txt'), 'y')
    // The SDK then sends `docs//x/y.txt`: the empty segment is dropped, as Kubo cleans a path.
    const folder = (await lighthouse.upload(`${join(dir, 'docs')}/`, apiKey)).data
    const tree = await unixfsTree({ 'x/y.txt': Buffer.from('y') })
    expect(folder).toMatchObject({ Name: 'docs', Hash: tree.root.toString() })
  })
})
