import { describe, it, expect } from 'vitest'
import { DashboardAuth, LOGIN_CODE_TTL_MS, CSRF_HEADER, sessionCookieName } from '../../src/daemon/index.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { httpGet } from '../helpers/http.js'
import { startInProcessDaemon } from '../helpers/in-process-daemon.js'

/** A login code, as `cidsync dashboard` gets one: a POST with the state dir's token. */
async function loginCode (port: number, token: string): Promise<string> {
  const answer = await httpGet({ port }, '/login-code', { method: 'POST', headers: { authorization: `Bearer ${token}` } })
  expect(answer.status).toBe(200)
  return (JSON.parse(answer.body) as { code: string }).code
}

async function signIn (port: number, token: string, host = `127.0.0.1:${port}`): Promise<{ cookie: string, csrf: string }> {
  const login = await httpGet({ port }, `/login?code=${await loginCode(port, token)}`, { host })
  expect(login.status).toBe(303)
  const cookie = String(login.headers['set-cookie']).split(';')[0] as string
  const session = JSON.parse((await httpGet({ port }, '/session', { host, headers: { cookie } })).body) as { signedIn: boolean, csrf?: string }
  expect(session.signedIn).toBe(true)
  // The cookie alone never gets the CSRF token: it comes once, in the redirect's fragment.
  expect(session.csrf).toBeUndefined()
  const csrf = /^\/#csrf=([\w-]+)$/.exec(String(login.headers.location))?.[1]
  expect(csrf).toBeDefined()
  return { cookie, csrf: csrf as string }
}

describe('dashboard sign-in', () => {
  it('serves the page to anyone who may read, with a strict content policy', async () => {
    const dir = await useTempDir()
    const { port } = await startInProcessDaemon(dir)
    const page = await httpGet({ port }, '/')
    expect(page.status).toBe(200)
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8')
    expect(page.headers['content-security-policy']).toContain("script-src 'self'")
    expect(page.headers['x-frame-options']).toBe('DENY')
    expect(page.body).toContain('/dashboard/app.js')
    expect((await httpGet({ port }, '/dashboard/app.js')).headers['content-type']).toContain('text/javascript')
    expect((await httpGet({ port }, '/', { host: 'evil.example' })).status).toBe(403)
  })

  it('mints login codes only for the state dir token, never for a signed-in page', async () => {
    const dir = await useTempDir()
    const { port, token } = await startInProcessDaemon(dir)
    expect((await httpGet({ port }, '/login-code', { method: 'POST' })).status).toBe(401)
    const { cookie, csrf } = await signIn(port, token)
    const fromPage = await httpGet({ port }, '/login-code', { method: 'POST', headers: { cookie, origin: `http://127.0.0.1:${port}`, [CSRF_HEADER]: csrf } })
    expect(fromPage.status).toBe(401)
  })

  it('trades a code once for an HttpOnly, SameSite=Strict cookie bound to the exact Host', async () => {
    const dir = await useTempDir()
    const { port, token } = await startInProcessDaemon(dir)
    const code = await loginCode(port, token)
    // A link preview's HEAD does not use the code up.
    expect((await httpGet({ port }, `/login?code=${code}`, { method: 'HEAD' })).status).toBe(405)
    const login = await httpGet({ port }, `/login?code=${code}`)
    expect(login.status).toBe(303)
    expect(login.headers.location).toMatch(/^\/#csrf=[\w-]{32}$/)
    expect(login.headers['referrer-policy']).toBe('no-referrer')
    const setCookie = String(login.headers['set-cookie'])
    expect(setCookie).toMatch(new RegExp(`^${sessionCookieName(`127.0.0.1:${port}`)}=[\\w-]{43}; HttpOnly; SameSite=Strict; Path=/; Max-Age=\\d+$`))
    expect((await httpGet({ port }, `/login?code=${code}`)).status).toBe(403)
    expect((await httpGet({ port }, '/login?code=guessed')).status).toBe(403)
    const cookie = setCookie.split(';')[0] as string
    // The same cookie sent with another name for this endpoint is not a session.
    const elsewhere = JSON.parse((await httpGet({ port }, '/session', { host: `localhost:${port}`, headers: { cookie: cookie.replace(/_\d+=/, `_${port}=`) } })).body) as { signedIn: boolean }
    expect(elsewhere.signedIn).toBe(false)
    const csrf = /^\/#csrf=([\w-]+)$/.exec(String(login.headers.location))?.[1] as string
    const otherHost = await httpGet({ port }, '/rescan', { method: 'POST', host: `localhost:${port}`, headers: { cookie, origin: `http://localhost:${port}`, [CSRF_HEADER]: csrf } })
    expect(otherHost.status).toBe(403)
    expect(otherHost.body).toContain('not signed in')
  })

  it('lets a signed-in page POST only from its own origin with its CSRF token', async () => {
    const dir = await useTempDir()
    const { port, token } = await startInProcessDaemon(dir)
    const { cookie, csrf } = await signIn(port, token)
    const own = `http://127.0.0.1:${port}`
    const post = async (headers: Record<string, string>): Promise<number> => (await httpGet({ port }, '/rescan', { method: 'POST', headers: { cookie, ...headers } })).status
    expect(await post({ origin: own })).toBe(403) // no CSRF header
    expect(await post({ origin: own, [CSRF_HEADER]: 'wrong' })).toBe(403)
    expect(await post({ origin: `http://localhost:${port}`, [CSRF_HEADER]: csrf })).toBe(403) // another origin of this very endpoint
    expect(await post({ origin: 'http://evil.example', [CSRF_HEADER]: csrf })).toBe(403)
    expect(await post({ 'sec-fetch-site': 'same-site', [CSRF_HEADER]: csrf })).toBe(403) // another port on 127.0.0.1
    expect(await post({ 'sec-fetch-site': 'cross-site', [CSRF_HEADER]: csrf })).toBe(403)
    expect(await post({ origin: own, [CSRF_HEADER]: csrf })).toBe(200)
    expect(await post({ 'sec-fetch-site': 'same-origin', [CSRF_HEADER]: csrf })).toBe(200)
    const out = await httpGet({ port }, '/logout', { method: 'POST', headers: { cookie, origin: own, [CSRF_HEADER]: csrf } })
    expect(out.status).toBe(200)
    expect(await post({ origin: own, [CSRF_HEADER]: csrf })).toBe(403)
  })

  it('holds up against a program on another local port: a planted cookie of the same name, the cookie without the fragment\'s token, and the token-only flags', async () => {
    const dir = await useTempDir()
    const { port, token } = await startInProcessDaemon(dir)
    const own = `http://127.0.0.1:${port}`
    const { cookie, csrf } = await signIn(port, token)
    const name = sessionCookieName(`127.0.0.1:${port}`)
    // Planted first by a page on another port (cookies ignore ports): ours still counts.
    const both = `${name}=tossed; ${cookie}`
    expect((await httpGet({ port }, '/rescan', { method: 'POST', headers: { cookie: both, origin: own, [CSRF_HEADER]: csrf } })).status).toBe(200)
    // The cookie alone (what another port receives) cannot act: no token, and /session does not hand it out.
    expect((await httpGet({ port }, '/rescan', { method: 'POST', headers: { cookie, origin: own } })).status).toBe(403)
    // Confirming a drop or repairing the pointer needs the state dir's token, never a session.
    const flagged = await httpGet({ port }, '/snapshot?confirmDrop=1', { method: 'POST', headers: { cookie, origin: own, [CSRF_HEADER]: csrf } })
    expect(flagged.status).toBe(403)
    expect(flagged.body).toContain('needs the token')
    const labelled = await httpGet({ port }, '/snapshot?keep=mine', { method: 'POST', headers: { cookie, origin: own, [CSRF_HEADER]: csrf } })
    expect(labelled.status).toBe(403)
  })

  it('lets a code expire after two minutes', () => {
    let now = 1_000_000
    const auth = new DashboardAuth(() => now)
    const { code } = auth.issueCode()
    now += LOGIN_CODE_TTL_MS + 1
    expect(auth.redeem(code, '127.0.0.1:7345')).toBeUndefined()
    const fresh = auth.issueCode().code
    expect(auth.redeem(fresh, '127.0.0.1:7345')?.cookie).toMatch(/^cidsync_session_7345=/)
  })
})
