import { describe, it, expect, afterEach } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { HttpClient, UploadClient, addQuery } from '../../src/remote/index.js'
import { bytesCid, cidProfile } from '../../src/content/index.js'
import { IntegrityError } from '../../src/errors.js'
import { ScriptedServer } from '../helpers/scripted-server.js'
import { useTempDir } from '../helpers/temp-dir.js'

const clients: HttpClient[] = []
afterEach(async () => { for (const c of clients.splice(0)) await c.close() })

async function setup (): Promise<{ server: ScriptedServer, upload: UploadClient, file: string, cid: string }> {
  const server = await new ScriptedServer().listen()
  const http = new HttpClient({ service: 'upload endpoint', baseUrl: server.url, retry: { baseDelayMs: 1 } })
  clients.push(http)
  const dir = await useTempDir()
  const file = join(dir, 'hello.txt')
  await writeFile(file, 'hello world')
  return { server, upload: new UploadClient(http), file, cid: bytesCid(Buffer.from('hello world'), cidProfile('kubo-cidv1')).toString() }
}

describe('the upload client', () => {
  it('names the import parameters and sends the file as one multipart field', async () => {
    const { server, upload, file, cid } = await setup()
    server.answer({ status: 200, body: { Name: 'hello.txt', Hash: cid, Size: '11' } })
    expect(await upload.add(file, cidProfile('kubo-cidv1'))).toEqual({ cid, size: 11 })
    const sent = server.received[0]
    expect(sent?.url).toBe('/api/v0/add?cid-version=1&raw-leaves=true&chunker=size-262144&wrap-with-directory=false')
    expect(sent?.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/)
    expect(sent?.body).toContain('Content-Disposition: form-data; name="file"; filename="hello.txt"')
    expect(sent?.body).toContain('\r\n\r\nhello world\r\n--')
    expect(addQuery(cidProfile('unixfs-v1-2025'))).toMatchObject({ chunker: 'size-1048576', 'max-file-links': '1024' })
  })

  it('reads Kubo\'s NDJSON answer, the root on the last line', async () => {
    const { server, upload, file, cid } = await setup()
    server.answer({ status: 200, body: `{"Name":"hello.txt","Bytes":11}\n{"Name":"hello.txt","Hash":"${cid}","Size":"11"}\n` })
    expect((await upload.add(file, cidProfile('kubo-cidv1'))).cid).toBe(cid)
  })

  it('refuses an answer whose CID is not the one computed here, naming both', async () => {
    const { server, upload, file, cid } = await setup()
    const other = bytesCid(Buffer.from('hello world'), cidProfile('unixfs-v0-2015')).toString()
    server.answer({ status: 200, body: { Name: 'hello.txt', Hash: other, Size: '19' } })
    const err = await upload.add(file, cidProfile('kubo-cidv1')).catch((e: unknown) => e) as IntegrityError
    expect(err).toBeInstanceOf(IntegrityError)
    expect(err.exitCode).toBe(4)
    expect(err.message).toContain(other)
    expect(err.message).toContain(cid)
  })

  it('sends the body again on a retry', async () => {
    const { server, upload, file, cid } = await setup()
    server.answer({ status: 503 }, { status: 200, body: { Hash: cid } })
    expect((await upload.add(file, cidProfile('kubo-cidv1'))).cid).toBe(cid)
    expect(server.received[1]?.body).toContain('hello world')
  })

  it('takes the CID the bytes were hashed to as they were written, and still refuses an answer that differs', async () => {
    const { server, upload, file, cid } = await setup()
    server.answer({ status: 200, body: { Hash: cid } })
    expect((await upload.add(file, cidProfile('kubo-cidv1'), { expectedCid: cid })).cid).toBe(cid)
    // The service answers the CID of what it was sent; an expected CID that is not it fails.
    const other = bytesCid(Buffer.from('hello there'), cidProfile('kubo-cidv1')).toString()
    server.answer({ status: 200, body: { Hash: cid } })
    const err = await upload.add(file, cidProfile('kubo-cidv1'), { expectedCid: other }).catch((e: unknown) => e) as IntegrityError
    expect(err).toBeInstanceOf(IntegrityError)
    expect(err.message).toContain(other)
  })
})
