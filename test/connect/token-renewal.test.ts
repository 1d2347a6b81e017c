import { describe, expect, it, onTestFinished } from 'vitest'
import { stat } from 'node:fs/promises'
import { join } from 'node:path'
import { formatWalletKey, newWalletKey, walletAddress } from '../../src/crypto/index.js'
import { startLocalService, type LocalService } from '../../src/local-service/index.js'
import { createServiceClients } from '../../src/remote/index.js'
import { RENEWED_TOKEN_FILE, TokenRenewal } from '../../src/connect/index.js'
import { authState } from '../../src/daemon/auth-state.js'
import { jwtClaims } from '../../src/util/jwt.js'
import { useTempDir } from '../helpers/temp-dir.js'

const DAY = 86_400_000

interface Setup { local: LocalService, renewal: TokenRenewal, clock: { now: number }, configured: string, wallet: string, address: string, dir: string, asked: () => number }

/**
 * A self-hosted service on loopback, an account signed in, a token of `ttlDays` given by hand,
 * and its renewal on a clock the test moves (no sleeping: the service is asked when the clock says).
 */
async function setup (ttlDays: number, options: { wallet?: 'kept' | 'none' | 'other', user?: string } = {}): Promise<Setup> {
  const dir = await useTempDir()
  const local = await startLocalService({ dir: join(dir, 's'), policy: { signup: 'open', allow: [], maxBytesPerAccount: 0, maxIpnsKeysPerAccount: 0 } })
  onTestFinished(async () => { await local.stop() })
  const url = local.url
  // One attempt a call: the renewal's own backoff is under test, not the HTTP client's retries.
  const clients = createServiceClients({ dealUrl: url, apiUrl: url, pointerUrl: url, uploadUrl: url, gateways: [url] }, { apiKey: () => undefined, sessionToken: () => undefined }, { retry: { attempts: 1 } })
  onTestFinished(async () => { await clients.close() })
  const key = newWalletKey()
  const address = walletAddress(key).toLowerCase()
  await clients.deals.login(key)
  const configured = local.issueToken(options.user ?? address, ttlDays * 86_400)
  const clock = { now: Date.now() }
  const wallet = options.wallet === 'none' ? undefined : formatWalletKey(options.wallet === 'other' ? newWalletKey() : key)
  const renewal = new TokenRenewal({
    configured: () => configured,
    walletKey: () => wallet,
    stateDir: join(dir, 'state'),
    request: async (k, expiresAfter) => await clients.session.tokenBySignature(k, { expiresAfter }),
    now: () => clock.now,
    random: () => 0.5
  })
  const asked = (): number => local.requestLog().filter(r => r.route === 'create_session_token').length
  return { local, renewal, clock, configured, wallet: wallet ?? '', address, dir, asked }
}

describe('renewing a self-hosted session token with the wallet\'s signature', () => {
  it('waits until half its life has passed, then renews it: the new one is used, kept 0600 in the state dir', async () => {
    const s = await setup(20)
    expect(await s.renewal.tick()).toBe('not-due')
    expect(s.renewal.state()).toMatchObject({ state: 'waiting', failures: 0 })
    s.clock.now += 10 * DAY - 60_000
    expect(await s.renewal.tick()).toBe('not-due')
    expect(s.asked()).toBe(0)
    s.clock.now += 120_000
    expect(await s.renewal.tick()).toBe('renewed')
    expect(s.asked()).toBe(1)
    const used = s.renewal.current() as string
    expect(used).not.toBe(s.configured)
    expect(jwtClaims(used)?.sub).toBe(s.address)
    expect(jwtClaims(used)?.exp?.getTime()).toBeGreaterThan(jwtClaims(s.configured)?.exp?.getTime() ?? Infinity)
    expect((await stat(join(s.dir, 'state', RENEWED_TOKEN_FILE))).mode & 0o777).toBe(0o600)
    expect(s.renewal.state()).toMatchObject({ state: 'renewed', lastError: null })
    // The renewed token is 30 days long: not due again for a while.
    expect(await s.renewal.tick()).toBe('not-due')
    expect(s.asked()).toBe(1)
  })

  it('backs off after failures (a minute, doubling), then renews once the service answers', async () => {
    const s = await setup(20)
    s.local.faults.set('create_session_token', { errorRate: 1, status: 503 })
    s.clock.now += 11 * DAY
    expect(await s.renewal.tick()).toBe('failed')
    const first = s.renewal.state()
    expect(first).toMatchObject({ state: 'failing', failures: 1 })
    expect(Date.parse(first.nextAttemptAt ?? '')).toBe(s.clock.now + 60_000)
    s.clock.now += 30_000
    expect(await s.renewal.tick()).toBe('not-due')
    expect(s.asked()).toBe(1)
    s.clock.now += 31_000
    expect(await s.renewal.tick()).toBe('failed')
    expect(Date.parse(s.renewal.state().nextAttemptAt ?? '')).toBe(s.clock.now + 120_000)
    s.local.faults.clear()
    s.clock.now += 119_000
    expect(await s.renewal.tick()).toBe('not-due')
    s.clock.now += 2_000
    expect(await s.renewal.tick()).toBe('renewed')
    expect(s.asked()).toBe(3)
    expect(s.renewal.state()).toMatchObject({ state: 'renewed', failures: 0, lastError: null, nextAttemptAt: null })
  })

  it('status warns a week ahead, and --check\'s problem appears only when renewal failed', async () => {
    const s = await setup(20)
    const connection = { mode: 'remote' as const, credentials: { apiKey: () => 'k', sessionToken: () => s.renewal.current() }, renewal: s.renewal }
    // Eight days left: due, not yet in the warning window.
    s.clock.now += 12 * DAY
    expect(authState(connection, s.clock.now).sessionToken).toMatchObject({ warning: null, problem: null })
    s.local.faults.set('create_session_token', { errorRate: 1, status: 503 })
    expect(await s.renewal.tick()).toBe('failed')
    // Said at once, a problem for --check only within the week.
    expect(authState(connection, s.clock.now).sessionToken.warning).toContain('renewing it failed once')
    expect(authState(connection, s.clock.now).sessionToken.problem).toBeNull()
    // Six days left and renewal failing: warned, and a problem for --check.
    s.clock.now += 2 * DAY
    const failing = authState(connection, s.clock.now).sessionToken
    expect(failing.warning).toContain('(in about 6 days): renewing it failed once')
    expect(failing.problem).toContain('publishing stops then')
    s.local.faults.clear()
    expect(await s.renewal.tick()).toBe('renewed')
    expect(authState(connection, s.clock.now).sessionToken).toMatchObject({ warning: null, problem: null })
  })

  it('without a wallet key, or with a token for another user, says it cannot renew, and --check fails a week ahead', async () => {
    for (const [options, why] of [[{ wallet: 'none' }, 'no wallet key is kept'], [{ user: 'alice' }, 'names user alice, not this wallet'], [{ wallet: 'other' }, 'not this wallet']] as const) {
      const s = await setup(20, options)
      const connection = { mode: 'remote' as const, credentials: { apiKey: () => 'k', sessionToken: () => s.renewal.current() }, renewal: s.renewal }
      s.clock.now += 14 * DAY
      expect(await s.renewal.tick()).toBe('unavailable')
      expect(s.renewal.state().why).toContain(why)
      expect(s.asked()).toBe(0)
      expect(authState(connection, s.clock.now).sessionToken.problem).toContain(why)
    }
  })
})
