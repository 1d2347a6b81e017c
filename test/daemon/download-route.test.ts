import { describe, expect, it, onTestFinished } from 'vitest'
import { connect, type Socket } from 'node:net'
import { randomBytes } from 'node:crypto'
import { copyFile, mkdir, readdir, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { CSRF_HEADER } from '../../src/daemon/index.js'
import { attachmentHeader, type DownloadFetcher } from '../../src/daemon/download-route.js'
import { StatusServer } from '../../src/daemon/status-server.js'
import { httpGet } from '../helpers/http.js'
import { startInProcessDaemon, statusOf, untilReached } from '../helpers/in-process-daemon.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until, within } from '../helpers/wait.js'
import { flipStoredBlock, storedBlocks } from '../helpers/service-blocks.js'

const NAME = 'report "q1" <b>ünï<b>;%.bin'

async function signIn (port: number, token: string): Promise<{ cookie: string, csrf: string }> {
  const code = (JSON.parse((await httpGet({ port }, '/login-code', { method: 'POST', headers: { authorization: `Bearer ${token}` } })).body) as { code: string }).code
  const login = await httpGet({ port }, `/login?code=${code}`)
  return { cookie: String(login.headers['set-cookie']).split(';')[0] as string, csrf: /^\/#csrf=([\w-]+)$/.exec(String(login.headers.location))?.[1] as string }
}

async function storedBoth (port: number, files: number): Promise<void> {
  await until(async () => {
    const kept = (await statusOf(port)).content?.folders.find(f => f.folder === 'kept')
    return kept !== undefined && kept.protected.files === files && kept.pending.files === 0 ? kept : undefined
  }, 60_000, 'the storing folder\'s files stored')
}

describe('GET /download', () => {
  it('sends a stored file only once verified, as an attachment, behind the guards; a past version with at; 404 for content not stored', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'kept'))
    const first = randomBytes(300_000)
    await writeFile(join(dir, 'kept', NAME), first)
    const other = Buffer.alloc(5000, 'other-file-bytes ')
    await writeFile(join(dir, 'kept', 'other.bin'), other)
    const { port, token, notes } = await startInProcessDaemon(dir, '[[folders]]\nname = "kept"\npath = "kept"\nstore = true\n')
    const stateDir = join(dir, 'state')
    await writeFile(join(notes, 'index-only.txt'), 'not stored')
    await untilReached(port)
    await storedBoth(port, 2)
    const bearer = { authorization: `Bearer ${token}` }
    const url = `http://127.0.0.1:${port}/download?path=${encodeURIComponent(`kept/${NAME}`)}`

    const got = await fetch(url, { headers: bearer })
    expect(got.status).toBe(200)
    expect(got.headers.get('content-type')).toBe('application/octet-stream')
    expect(got.headers.get('x-content-type-options')).toBe('nosniff')
    expect(got.headers.get('cache-control')).toBe('no-store')
    expect(got.headers.get('content-disposition')).toBe(`attachment; filename="report _q1_ <b>_n_<b>__.bin"; filename*=UTF-8''${encodeURIComponent(NAME)}`)
    expect(Buffer.from(await got.arrayBuffer()).equals(first)).toBe(true)

    // A signed-in page with its CSRF header may; without it, or without a session, or from elsewhere, not.
    const { cookie, csrf } = await signIn(port, token)
    const own = `http://127.0.0.1:${port}`
    const path = `/download?path=${encodeURIComponent(`kept/${NAME}`)}`
    expect((await fetch(url, { headers: { cookie, origin: own, [CSRF_HEADER]: csrf } })).status).toBe(200)
    expect((await httpGet({ port }, path, { headers: { cookie, origin: own } })).status).toBe(403)
    expect((await httpGet({ port }, path)).status).toBe(401)
    expect((await httpGet({ port }, path, { host: 'evil.example', headers: bearer })).status).toBe(403)
    expect((await httpGet({ port }, path, { headers: { ...bearer, origin: 'http://evil.example' } })).status).toBe(403)
    expect((await httpGet({ port }, path, { method: 'POST', headers: bearer })).status).not.toBe(200)
    expect((await httpGet({ port }, '/download?path=x', { headers: bearer })).status).toBe(400)

    const notStored = await httpGet({ port }, '/download?path=notes/index-only.txt', { headers: bearer })
    expect(notStored.status).toBe(404)
    expect(JSON.parse(notStored.body)).toMatchObject({ code: 'ERR_CONTENT_NOT_STORED', advice: expect.stringContaining('store = true') })
    expect((await httpGet({ port }, '/download?path=kept/no-such-file', { headers: bearer })).status).toBe(404)

    const firstLog = JSON.parse((await httpGet({ port }, `/log?path=${encodeURIComponent(`kept/${NAME}`)}`, { headers: bearer })).body) as { versions: Array<{ cid: string, fetchable: boolean, stored: string }> }
    expect(firstLog.versions).toMatchObject([{ fetchable: true, stored: expect.stringMatching(/^(stored|sent-for-deal|deal-active)$/) }])
    const firstCid = firstLog.versions[0]?.cid as string
    // A version by its CID, while the path holds it; another file's CID under this path's name is no version of it.
    const current = await fetch(`${url}&cid=${firstCid}`, { headers: bearer })
    expect(current.status).toBe(200)
    expect(Buffer.from(await current.arrayBuffer()).equals(first)).toBe(true)
    const otherCid = (JSON.parse((await httpGet({ port }, '/log?path=kept/other.bin', { headers: bearer })).body) as { versions: Array<{ cid: string }> }).versions[0]?.cid as string
    expect(otherCid).toMatch(/^b/)
    const foreign = await httpGet({ port }, `${path}&cid=${otherCid}`, { headers: bearer })
    expect(foreign.status).toBe(404)
    expect(foreign.body).not.toContain('other-file-bytes')
    expect(foreign.headers['content-disposition']).toBeUndefined()
    // A publish, then a change: at= the publish's time brings the first version back.
    const published = await httpGet({ port }, '/snapshot', { method: 'POST', headers: bearer })
    expect(published.status, published.body).toBe(200)
    const before = new Date().toISOString()
    await until(async () => Date.now() > Date.parse(before) + 5 ? true : undefined, 5_000, 'the clock to move on')
    const second = randomBytes(1000)
    await writeFile(join(dir, 'kept', NAME), second)
    await until(async () => {
      const now = await fetch(url, { headers: bearer })
      const bytes = Buffer.from(await now.arrayBuffer())
      return now.status === 200 && bytes.equals(second) ? true : undefined
    }, 60_000, 'the changed file stored and downloadable')
    const past = await fetch(`${url}&at=${encodeURIComponent(before)}`, { headers: bearer })
    expect(past.status).toBe(200)
    expect(Buffer.from(await past.arrayBuffer()).equals(first)).toBe(true)
    // An older version by its CID with the publish that held it; without it (and no kept history of the path) it is not known as this path's.
    const byCid = await fetch(`${url}&cid=${firstCid}&at=${encodeURIComponent(before)}`, { headers: bearer })
    expect(byCid.status).toBe(200)
    expect(Buffer.from(await byCid.arrayBuffer()).equals(first)).toBe(true)
    expect((await httpGet({ port }, `${path}&cid=${firstCid}`, { headers: bearer })).status).toBe(404)
    const search = JSON.parse((await httpGet({ port }, '/search?q=report', { headers: bearer })).body) as { results: Array<{ stored: string }> }
    expect(search.results).toMatchObject([{ stored: expect.stringMatching(/^(stored|sent-for-deal|deal-active)$/) }])
    expect((await httpGet({ port }, `${path}&cid=nope`, { headers: bearer })).status).toBe(400)
    // Removed once sent (just after the client has the last byte).
    await until(async () => (await readdir(join(stateDir, 'content-fetch')).catch(() => [])).some(n => n.startsWith('download-')) ? undefined : true, 10_000, 'the temp files removed')
  }, 240_000)

  it('refuses content that comes back damaged: ERR_*INTEGRITY, none of its bytes sent, nothing left in the state dir', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'kept'))
    const content = Buffer.alloc(200_000, 'secret-bytes ')
    await writeFile(join(dir, 'kept', 'doc.txt'), content)
    const { port, token } = await startInProcessDaemon(dir, '[[folders]]\nname = "kept"\npath = "kept"\nstore = true\n')
    await untilReached(port)
    await storedBoth(port, 1)
    // Flip one bit in every block the embedded service holds: a damaged disk at the service.
    const serviceDir = join(dir, 'state', 'service')
    const blocks = storedBlocks(serviceDir)
    expect(blocks.length).toBeGreaterThan(0)
    for (const cid of blocks) flipStoredBlock(serviceDir, cid)
    const refused = await httpGet({ port }, '/download?path=kept/doc.txt', { headers: { authorization: `Bearer ${token}` } })
    expect(refused.status).toBe(502)
    expect(refused.headers['content-disposition']).toBeUndefined()
    expect(refused.headers['content-type']).toBe('application/json')
    expect(JSON.parse(refused.body)).toMatchObject({ code: expect.stringMatching(/^ERR_[A-Z_]*INTEGRITY$/) })
    expect(refused.body).not.toContain('secret-bytes')
    expect((await readdir(join(dir, 'state', 'content-fetch')).catch(() => [])).filter(n => n.startsWith('download-'))).toEqual([])
  }, 240_000)
  it('runs two downloads at once and turns a third away with ERR_BUSY; a client that goes away midway leaves nothing behind', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'kept'))
    const content = randomBytes(24 * 1024 * 1024)
    await writeFile(join(dir, 'kept', 'big.bin'), content)
    const { port, token } = await startInProcessDaemon(dir, '[[folders]]\nname = "kept"\npath = "kept"\nstore = true\n')
    await untilReached(port)
    await storedBoth(port, 1)
    const bearer = { authorization: `Bearer ${token}` }
    const url = `http://127.0.0.1:${port}/download?path=kept/big.bin`
    const downloads = async (): Promise<string[]> => (await readdir(join(dir, 'state', 'content-fetch')).catch(() => [])).filter(n => n.startsWith('download-'))

    const answers = await Promise.all([0, 1, 2].map(async () => {
      const answer = await fetch(url, { headers: bearer })
      return { status: answer.status, body: Buffer.from(await answer.arrayBuffer()) }
    }))
    const busy = answers.filter(a => a.status === 503)
    expect(busy).toHaveLength(1)
    expect(JSON.parse(busy[0]?.body.toString() ?? '{}')).toMatchObject({ code: 'ERR_BUSY' })
    for (const a of answers.filter(a => a.status === 200)) expect(a.body.equals(content)).toBe(true)

    // Gone midway: the fetch stops, its temp dir goes, and the slot is free again.
    await until(async () => (await downloads()).length === 0 ? true : undefined, 10_000, 'the finished downloads\' temps removed')
    const abandoned = new AbortController()
    // Its headers read and none of its 24 MiB body (more than loopback buffers hold): the download
    // cannot end before the client goes away, however fast the machine serves it.
    const midway = await within(fetch(url, { headers: bearer, signal: abandoned.signal }), 30_000, 'the download\'s headers')
    expect(midway.status).toBe(200)
    expect((await downloads()).length, 'the download under way').toBeGreaterThan(0)
    abandoned.abort()
    expect(await midway.arrayBuffer().catch((err: unknown) => err)).toBeInstanceOf(Error)
    await until(async () => (await downloads()).length === 0 ? true : undefined, 30_000, 'the abandoned download\'s temp removed')
    const again = await Promise.all([0, 1].map(async () => (await fetch(url, { headers: bearer })).status))
    expect(again).toEqual([200, 200])
  }, 240_000)
})

describe('GET /download to a client that stops reading', () => {
  // The status server alone, with a fetcher that stages a real file as the daemon's does: the drop
  // is the route's, and a short stall bound shows it without waiting for the real one.
  it('drops it once nothing moves for a while: its staged file goes and its slot is free again (not held for the 30-minute bound)', async () => {
    const dir = await useTempDir()
    const staged = join(dir, 'staged')
    await mkdir(staged)
    const content = randomBytes(32 * 1024 * 1024)
    const source = join(dir, 'big.bin')
    await writeFile(source, content)
    let made = 0
    const fetcher: DownloadFetcher = async () => {
      const path = join(staged, `download-${made++}`)
      await copyFile(source, path)
      return { path, size: content.length, remove: async () => { await rm(path, { force: true }) } }
    }
    const token = 'download-token'
    const server = new StatusServer({ status: () => ({}) as never, token, download: fetcher }, { downloadStallMs: 500 })
    onTestFinished(async () => { await server.close() })
    const bound = await server.listen({ kind: 'tcp', host: '127.0.0.1', port: 0 })
    const port = bound.kind === 'tcp' ? bound.port : 0
    const downloads = async (): Promise<string[]> => (await readdir(staged)).filter(n => n.startsWith('download-'))
    // Two clients read the headers and then nothing more, the socket kept open: every slot taken.
    const stalled = await Promise.all([0, 1].map(async () => await new Promise<Socket>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => { socket.write(`GET /download?path=kept/big.bin HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${token}\r\n\r\n`) })
      socket.once('data', (chunk: Buffer) => { socket.pause(); chunk.toString('latin1').startsWith('HTTP/1.1 200') ? resolve(socket) : reject(new Error(chunk.toString('latin1').slice(0, 200))) })
      socket.once('error', reject)
    })))
    onTestFinished(() => { for (const s of stalled) s.destroy() })
    expect(await downloads()).toHaveLength(2)
    expect((await fetch(`http://127.0.0.1:${port}/download?path=kept/big.bin`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(503)
    await until(async () => (await downloads()).length === 0 ? true : undefined, 30_000, 'the stalled downloads dropped and their staged files removed')
    const again = await fetch(`http://127.0.0.1:${port}/download?path=kept/big.bin`, { headers: { authorization: `Bearer ${token}` } })
    expect(again.status).toBe(200)
    expect(Buffer.from(await again.arrayBuffer()).equals(content)).toBe(true)
    // Removed once sent (just after the client has the last byte).
    await until(async () => (await downloads()).length === 0 ? true : undefined, 10_000, 'the sent file\'s staged copy removed')
  })
})

describe('attachmentHeader', () => {
  it('neutralises control and bidi characters in both names: no header injection, no name that reads backwards', () => {
    const header = attachmentHeader('kept/a\r\nSet-Cookie: x=1\u0000"\\;%.txt')
    expect(header).not.toMatch(/[\r\n\0]/)
    expect(header).toBe('attachment; filename="a__Set-Cookie: x=1_____.txt"; filename*=UTF-8\'\'a__Set-Cookie%3A%20x%3D1_%22%5C%3B%25.txt')
    // U+202E would show "invoice-exe.pdf" for a file that is invoice-fdp.exe.
    const bidi = attachmentHeader('kept/invoice-\u202efdp.exe')
    expect(decodeURIComponent(bidi.split("UTF-8''")[1] as string)).toBe('invoice-_fdp.exe')
    expect(bidi).not.toContain('%E2%80%AE')
    expect(attachmentHeader('kept/ünï \u2067x\u2069.bin')).toBe('attachment; filename="_n_ _x_.bin"; filename*=UTF-8\'\'%C3%BCn%C3%AF%20_x_.bin')
  })
})
