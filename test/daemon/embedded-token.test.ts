import { describe, it, expect, afterEach } from 'vitest'
import { stopWhenFinished } from '../helpers/in-process-daemon.js'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import pino from 'pino'
import { loadConfig } from '../../src/config/index.js'
import { Daemon } from '../../src/daemon/index.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { within, until } from '../helpers/wait.js'
import { httpGet } from '../helpers/http.js'
import { writeTestConfig } from '../helpers/config-file.js'

const running: Daemon[] = []
const saved = process.env.CIDSYNC_EMBEDDED_TOKEN_TTL_SECONDS
afterEach(async () => {
  if (saved === undefined) delete process.env.CIDSYNC_EMBEDDED_TOKEN_TTL_SECONDS
  else process.env.CIDSYNC_EMBEDDED_TOKEN_TTL_SECONDS = saved
})

describe('the embedded service\'s session token', () => {
  it('is renewed before it expires: the daemon keeps publishing across several lifetimes (4 s standing in for 7 days)', async () => {
    process.env.CIDSYNC_EMBEDDED_TOKEN_TTL_SECONDS = '4'
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'))
    await writeTestConfig(dir, { snapshot: { deal: false } })
    const daemon = new Daemon({ logger: pino({ level: 'silent' }) }, { config: loadConfig({ configPath: join(dir, 'config.toml'), env: {} }) })
    stopWhenFinished(running, daemon)
    await within(daemon.start(), 10_000, 'the daemon to start')
    await until(() => daemon.status().publish !== null ? true : undefined, 15_000, 'the service to be reached')
    const port = Number(daemon.statusAddress?.split(':').pop())
    const token = (await readFile(join(dir, 'state', 'status.token'), 'utf8')).trim()
    const cids = new Set<string>()
    let lastExpiry = 0
    for (let round = 0; round < 3; round++) {
      await writeFile(join(dir, 'notes', `round-${round}.md`), `round ${round}`)
      await until(() => daemon.status().index.files === round + 1 ? true : undefined, 10_000, `round ${round}'s file to be indexed`)
      const published = await httpGet({ port }, '/snapshot', { method: 'POST', headers: { authorization: `Bearer ${token}` } })
      expect(published.status, published.body).toBe(200)
      cids.add((JSON.parse(published.body) as { cid: string }).cid)
      const auth = daemon.status().auth.sessionToken
      const expiry = Date.parse(auth.expiresAt ?? '')
      expect(expiry - Date.now()).toBeLessThanOrEqual(4_000)
      expect(expiry).toBeGreaterThan(lastExpiry)
      expect(auth.warning).toBeNull()
      lastExpiry = expiry
      // Let this token run out before the next round.
      await until(() => Date.now() > expiry + 50 ? true : undefined, 5_000, 'the token to expire')
    }
    expect(cids.size).toBe(3)
    expect(daemon.status().publish).toMatchObject({ lastError: null })
  }, 60_000) // three real token lifetimes; about 15 s on an idle machine
})
