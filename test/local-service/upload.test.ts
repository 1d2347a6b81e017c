import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'

type Service = Awaited<ReturnType<typeof localServiceUnderTest>>
interface Part { readonly filename: string, readonly bytes?: Uint8Array | string, readonly type?: string }

/** A multipart body written by hand: the filename exactly as given (kubo-rpc-client percent-encodes it; the Lighthouse SDK does not). */
function multipart (parts: readonly Part[]): { body: Buffer, type: string } {
  const boundary = 'kubo-test-boundary'
  const chunks: Buffer[] = []
  for (const [i, part] of parts.entries()) {
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file-${i}"; filename="${part.filename}"\r\nContent-Type: ${part.type ?? 'application/octet-stream'}\r\n\r\n`))
    chunks.push(Buffer.from(part.bytes ?? ''), Buffer.from('\r\n'))
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`))
  return { body: Buffer.concat(chunks), type: `multipart/form-data; boundary=${boundary}` }
}

async function add (service: Service, query: string, parts: readonly Part[]): Promise<{ status: number, text: string, lines: Array<Record<string, unknown>> }> {
  const { body, type } = multipart(parts)
  const response = await fetch(`${service.local.url}/api/v0/add?${query}`, { method: 'POST', body, headers: { authorization: `Bearer ${service.apiKey}`, 'content-type': type } })
  const text = await response.text()
  return { status: response.status, text, lines: response.ok ? text.trim().split('\n').map(l => JSON.parse(l) as Record<string, unknown>) : [] }
}

async function listed (service: Service): Promise<Array<{ cid: string, name: string, size: number }>> {
  const rows: Array<{ cid: string, name: string, size: number }> = []
  for await (const r of service.clients.files()) rows.push({ cid: r.cid, name: r.fileName, size: Number(r.fileSizeInBytes) })
  return rows
}

const stored = async (service: Service, cid: string): Promise<number> => (await fetch(`${service.local.url}/ipfs/${cid}?format=raw`)).status

describe.skipIf(EXTERNAL)('local service: POST /api/v0/add as Kubo answers it', () => {
  it('answers one file with one object, its name decoded as Kubo decodes it, and lists it so', async () => {
    const service = await localServiceUnderTest()
    const encoded = await add(service, 'cid-version=1', [{ filename: encodeURIComponent('é 1+1.txt'), bytes: 'accented' }])
    expect(encoded.status, encoded.text).toBe(200)
    // One object, no newline after it: the shape production answers one file with.
    expect(encoded.text.endsWith('}')).toBe(true)
    expect(encoded.lines[0]?.Name).toBe('é 1+1.txt')
    const raw = await add(service, 'cid-version=1', [{ filename: 'ü.txt', bytes: 'sent raw' }])
    expect(raw.lines[0]?.Name).toBe('ü.txt')
    expect((await listed(service)).map(r => r.name).sort()).toEqual(['é 1+1.txt', 'ü.txt'])
  })

  it('lists a directory once, at its files\' bytes, and a wrapping directory alone', async () => {
    const service = await localServiceUnderTest()
    const parts = [{ filename: 'd', type: 'application/x-directory' }, { filename: 'd/a.txt', bytes: 'aa' }, { filename: 'd/e', type: 'application/x-directory' }]
    const tree = await add(service, 'cid-version=1&stream-channels=true', parts)
    expect(tree.lines.map(l => l.Name)).toEqual(['d/a.txt', 'd/e', 'd'])
    // Without stream-channels (the storage service's SDK), one root is answered alone, as one object.
    const alone = await add(service, 'cid-version=1', parts)
    expect(alone.lines).toEqual([tree.lines[2]])
    expect(alone.text.trim().split('\n')).toHaveLength(1)
    const wrapped = await add(service, 'cid-version=1&wrap-with-directory=true&stream-channels=true', [{ filename: 'x.txt', bytes: 'xyz' }, { filename: 'y.txt', bytes: 'y' }])
    expect(wrapped.lines.map(l => l.Name)).toEqual(['x.txt', 'y.txt', ''])
    const rows = await listed(service)
    expect(rows.map(r => [r.cid, r.size]).sort()).toEqual([[tree.lines[2]?.Hash, 2], [tree.lines[2]?.Hash, 2], [wrapped.lines[2]?.Hash, 4]].sort())
    // Two unnamed parts of the same bytes take the same name (their CID) in one directory.
    const twice = await add(service, 'wrap-with-directory=true', [{ filename: '', bytes: 'same' }, { filename: '', bytes: 'same' }])
    expect(twice.status).toBe(400)
    expect(twice.text).toContain('two parts are named')
    expect((await add(service, '', [{ filename: 'a', bytes: 'a' }, { filename: 'a/b', bytes: 'b' }])).text).toContain('a is sent as a file and as a directory')
  })

  it('keeps nothing of an upload that fails midway, and counts a deleted upload until its space is reclaimed', async () => {
    const service = await localServiceUnderTest({ policy: { signup: 'open', allow: [], maxBytesPerAccount: 1000, maxIpnsKeysPerAccount: 0 } })
    // A part stored, then the request refused for a later one: the stored part's blocks go too.
    const first = randomBytes(900)
    const hashed = await add(service, 'cid-version=1&only-hash=true', [{ filename: 'x', bytes: first }])
    const refused = await add(service, 'cid-version=1', [{ filename: 'd/x', bytes: first }, { filename: 'd/x', bytes: 'y' }])
    expect(refused.status).toBe(400)
    expect(await stored(service, hashed.lines[0]?.Hash as string)).toBe(404)
    expect(await listed(service)).toEqual([])
    // Added, then deleted: its bytes are still held, so a second add past the quota is refused.
    const kept = await add(service, 'cid-version=1', [{ filename: 'a.bin', bytes: first }])
    expect(kept.status, kept.text).toBe(200)
    const id = (await service.clients.files().next()).value?.id as string
    const deleted = await fetch(`${service.local.url}/api/user/delete_file?id=${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${service.apiKey}` } })
    expect(deleted.status).toBe(200)
    expect(await listed(service)).toEqual([])
    expect((await add(service, 'cid-version=1', [{ filename: 'b.bin', bytes: randomBytes(900) }])).status).toBe(413)
  })

  it('only hashes with only-hash: nothing stored, listed, or counted against the quota', async () => {
    const service = await localServiceUnderTest({ policy: { signup: 'open', allow: [], maxBytesPerAccount: 1000, maxIpnsKeysPerAccount: 0 } })
    const hashed = await add(service, 'cid-version=1&only-hash=true', [{ filename: 'big.bin', bytes: randomBytes(5000) }])
    expect(hashed.status, hashed.text).toBe(200)
    expect(await stored(service, hashed.lines[0]?.Hash as string)).toBe(404)
    expect(await listed(service)).toEqual([])
    expect((await add(service, 'cid-version=1', [{ filename: 'big.bin', bytes: randomBytes(5000) }])).status).toBe(413)
  })

  it('takes pin=false and timeout, keeping and listing what it stores', async () => {
    const service = await localServiceUnderTest()
    const kept = await add(service, 'pin=false&timeout=1m30s', [{ filename: 'p.txt', bytes: 'kept' }])
    expect(kept.status, kept.text).toBe(200)
    expect(await stored(service, kept.lines[0]?.Hash as string)).toBe(200)
    expect((await listed(service)).map(r => r.cid)).toEqual([kept.lines[0]?.Hash])
    expect((await add(service, 'timeout=soon', [{ filename: 'p.txt', bytes: 'kept' }])).status).toBe(400)
  })

  it('answers progress lines before each file\'s own, as Kubo\'s adder reports them', async () => {
    const service = await localServiceUnderTest()
    const answer = await add(service, 'cid-version=1&progress=true', [{ filename: 'big.bin', bytes: randomBytes(600 * 1024) }, { filename: 'empty' }])
    const progress = answer.lines.filter(l => l.Hash === undefined)
    expect(progress.at(-1)).toEqual({ Name: 'empty' })
    const big = progress.filter(l => l.Name === 'big.bin').map(l => l.Bytes as number)
    expect(big.at(-1)).toBe(600 * 1024)
    expect(big.slice(0, -1).every((b, i) => b >= (i + 1) * 262144)).toBe(true)
    expect(answer.lines.map(l => l.Hash === undefined ? 'progress' : l.Name).filter((n, i, all) => n !== all[i - 1])).toEqual(['progress', 'big.bin', 'progress', 'empty'])
  })
})
