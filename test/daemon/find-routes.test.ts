import { describe, expect, it } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { loadConfig } from '../../src/config/index.js'
import { CSRF_HEADER } from '../../src/daemon/index.js'
import { httpGet } from '../helpers/http.js'
import { startInProcessDaemon } from '../helpers/in-process-daemon.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'

async function signIn (port: number, token: string): Promise<{ cookie: string, csrf: string }> {
  const code = (JSON.parse((await httpGet({ port }, '/login-code', { method: 'POST', headers: { authorization: `Bearer ${token}` } })).body) as { code: string }).code
  const login = await httpGet({ port }, `/login?code=${code}`)
  return { cookie: String(login.headers['set-cookie']).split(';')[0] as string, csrf: /^\/#csrf=([\w-]+)$/.exec(String(login.headers.location))?.[1] as string }
}

describe('GET /search, /where, /log, /browse', () => {
  it('answers the token or a signed-in page, refuses foreign Host and Origin, and follows the index', async () => {
    const dir = await useTempDir()
    const { port, token, notes } = await startInProcessDaemon(dir)
    await writeFile(join(notes, 'plan <img src=x onerror=alert(1)>.md'), 'hello')
    const bearer = { authorization: `Bearer ${token}` }
    type Search = { results: Array<{ path: string, cid: string, stored: string }>, complete: boolean }
    const found = await until(async () => {
      const answer = JSON.parse((await httpGet({ port }, '/search?q=PLAN', { headers: bearer })).body) as Search
      return answer.results.length > 0 ? answer : undefined
    }, 20_000, 'the new file to be searchable')
    expect(found).toMatchObject({ complete: true, results: [{ path: 'plan <img src=x onerror=alert(1)>.md', stored: 'local-only' }] })
    const cid = found.results[0]?.cid as string

    const where = await httpGet({ port }, `/where?cid=${cid}`, { headers: bearer })
    expect(JSON.parse(where.body)).toMatchObject({ cid, holders: [{ folder: 'notes', path: 'plan <img src=x onerror=alert(1)>.md' }] })
    const log = await httpGet({ port }, `/log?path=${encodeURIComponent('notes/plan <img src=x onerror=alert(1)>.md')}`, { headers: bearer })
    expect(JSON.parse(log.body)).toMatchObject({ versions: [{ cid, current: true, fetchable: false }] })
    const browse = await httpGet({ port }, '/browse?prefix=notes/', { headers: bearer })
    expect(JSON.parse(browse.body)).toMatchObject({ files: [{ name: 'plan <img src=x onerror=alert(1)>.md', size: 5 }] })
    expect(JSON.parse((await httpGet({ port }, '/browse', { headers: bearer })).body)).toMatchObject({ dirs: [{ name: 'notes', files: 1, bytes: 5 }] })

    // Refused: no credentials, a foreign Host or Origin, a page without its CSRF header, bad queries.
    expect((await httpGet({ port }, '/search?q=plan')).status).toBe(401)
    expect((await httpGet({ port }, '/search?q=plan', { host: 'evil.example', headers: bearer })).status).toBe(403)
    expect((await httpGet({ port }, '/where?cid=x', { headers: { ...bearer, origin: 'http://evil.example' } })).status).toBe(403)
    expect((await httpGet({ port }, '/log?path=notes/x', { headers: { ...bearer, origin: 'http://evil.example' } })).status).toBe(403)
    const { cookie, csrf } = await signIn(port, token)
    const own = `http://127.0.0.1:${port}`
    expect((await httpGet({ port }, '/search?q=plan', { headers: { cookie, origin: own } })).status).toBe(403)
    expect((await httpGet({ port }, '/search?q=plan', { headers: { cookie, origin: own, [CSRF_HEADER]: csrf } })).status).toBe(200)
    expect((await httpGet({ port }, '/where?cid=not-a-cid', { headers: bearer })).status).toBe(400)
    expect((await httpGet({ port }, '/search', { headers: bearer })).status).toBe(400)
    expect((await httpGet({ port }, '/log?path=nofolder', { headers: bearer })).status).toBe(400)
    expect((await httpGet({ port }, '/search?q=plan', { method: 'POST', headers: bearer })).status).toBe(404)
  })
})

describe('GET /browse?at=', () => {
  it('lists a folder as a past publish saw it, fetched once through the service', async () => {
    const dir = await useTempDir()
    const { port, token, notes } = await startInProcessDaemon(dir, { snapshot: { quiet_seconds: 3600, min_interval_seconds: 3600 } })
    const bearer = { authorization: `Bearer ${token}` }
    await writeFile(join(notes, 'first.md'), 'one')
    type Listing = { files: Array<{ name: string }>, publish?: { cid: string }, error?: string }
    const browseNow = async (): Promise<Listing> => JSON.parse((await httpGet({ port }, '/browse?prefix=notes/', { headers: bearer })).body) as Listing
    await until(async () => (await browseNow()).files.length === 1 || undefined, 20_000, 'the first file indexed')
    const published = await until(async () => {
      const answer = await httpGet({ port }, '/snapshot', { method: 'POST', headers: bearer })
      return answer.status === 200 ? JSON.parse(answer.body) as { cid: string } : undefined
    }, 30_000, 'a publish')
    const between = new Date().toISOString()
    await writeFile(join(notes, 'second.md'), 'two')
    await until(async () => (await browseNow()).files.length === 2 || undefined, 20_000, 'the second file indexed')

    const past = await httpGet({ port }, `/browse?prefix=notes/&at=${encodeURIComponent(between)}`, { headers: bearer })
    expect(past.status, past.body).toBe(200)
    const listing = JSON.parse(past.body) as Listing
    expect(listing.files.map(f => f.name)).toEqual(['first.md'])
    expect(listing.publish?.cid).toBe(published.cid)
    const before = await httpGet({ port }, '/browse?at=2000-01-01T00:00:00Z', { headers: bearer })
    expect(before.status).toBe(404)
    expect((await httpGet({ port }, '/browse?at=yesterday', { headers: bearer })).status).toBe(400)
  })

  it('refuses a pointer set back behind this device\'s own last publish, as find --at does', async () => {
    const dir = await useTempDir()
    const { port, token, notes, config } = await startInProcessDaemon(dir, { snapshot: { quiet_seconds: 3600, min_interval_seconds: 3600 } })
    const bearer = { authorization: `Bearer ${token}` }
    const publish = async (): Promise<string> => (await until(async () => {
      const answer = await httpGet({ port }, '/snapshot', { method: 'POST', headers: bearer })
      return answer.status === 200 ? JSON.parse(answer.body) as { cid: string } : undefined
    }, 30_000, 'a publish')).cid
    await writeFile(join(notes, 'first.md'), 'one')
    const indexed = async (): Promise<number> => (JSON.parse((await httpGet({ port }, '/browse?prefix=notes/', { headers: bearer })).body) as { files: unknown[] }).files.length
    await until(async () => await indexed() === 1 || undefined, 20_000, 'the first file indexed')
    const first = await publish()
    const between = new Date().toISOString()
    await writeFile(join(notes, 'second.md'), 'two')
    await until(async () => await indexed() === 2 || undefined, 20_000, 'the second file indexed')
    expect(await publish()).not.toBe(first)
    // The lying service serves the first publish as the pointer again.
    const db = new Database(join(loadConfig({ configPath: config, env: {} }).service.dir, 'service.sqlite'))
    try { db.pragma('busy_timeout = 5000'); db.prepare('UPDATE pointers SET snapshot_cid = ?').run(first) } finally { db.close() }

    const refused = await httpGet({ port }, `/browse?prefix=notes/&at=${encodeURIComponent(new Date().toISOString())}`, { headers: bearer })
    expect(refused.status).toBe(502)
    expect((JSON.parse(refused.body) as { error: string }).error).toContain('the pointer\'s history lacks this device\'s own publish')
    const before = await httpGet({ port }, `/browse?prefix=notes/&at=${encodeURIComponent(between)}`, { headers: bearer })
    expect(before.status, before.body).toBe(200)
  })
})
