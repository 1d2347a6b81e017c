import { describe, it, expect } from 'vitest'
import { lstat, readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DaemonProcess, runCli } from '../helpers/cli.js'
import { adminToken, device, ok, post, proofDir, remoteDevice, report, seeded, serviceProcess, statusOf, writeFiles } from './harness.js'

/**
 * Secrets: the API key, session token, wallet key, snapshot key and admin token never appear in
 * logs (at debug level), /status, /metrics, or error messages; every file cidsync keeps is 0600
 * and every directory 0700.
 */
async function modes (dir: string, skip: ReadonlySet<string>): Promise<string[]> {
  const loose: string[] = []
  const pending = [dir]
  while (pending.length > 0) {
    const current = pending.pop() as string
    const info = await lstat(current)
    if ((info.mode & 0o077) !== 0) loose.push(`${current} ${(info.mode & 0o777).toString(8)}`)
    if (!info.isDirectory()) continue
    for (const name of await readdir(current)) if (!skip.has(join(current, name))) pending.push(join(current, name))
  }
  return loose
}

/** A secret and the other spellings it could leak in. */
function spellings (value: string): string[] {
  const forms = new Set([value])
  const prefix = /^cidsync-key-1:(.+)$/.exec(value)?.[1]
  if (prefix !== undefined) {
    const raw = Buffer.from(prefix, 'base64url')
    forms.add(prefix).add(raw.toString('hex')).add(raw.toString('base64'))
  }
  if (/^0x[0-9a-f]+$/i.test(value)) forms.add(value.slice(2))
  return [...forms].filter(f => f.length >= 16)
}

describe('proof: secrets', () => {
  it('no secret in logs, status, metrics or errors, and every state file is private', async () => {
    const rng = seeded('secrets')
    const root = await proofDir()
    const service = await serviceProcess(join(root, 'service'))
    const a = await remoteDevice(root, 'a', service, { extra: 'log_level = "debug"\n[snapshot]\nipns_key = "auto"\nquiet_seconds = 0\nmin_interval_seconds = 0\n' })
    await writeFiles(a.folder, 20, rng)
    const seen: string[] = []
    const daemon = new DaemonProcess(['--config', a.config])
    await daemon.logged('service ready', 30_000)
    seen.push((await post(a, '/snapshot')).body, (await post(a, '/reconcile')).body)
    const { port } = await statusOf(a)
    seen.push(await (await fetch(`http://127.0.0.1:${port}/status`)).text(), await (await fetch(`http://127.0.0.1:${port}/metrics`)).text())
    seen.push(JSON.stringify(await runCli(['status', '--json', '--config', a.config])))
    // Refused credentials: the errors must name the problem, not the value.
    const sessionToken = (await readFile(join(a.root, 'session-token'), 'utf8')).trim()
    const apiKey = (await readFile(join(a.root, 'api-key'), 'utf8')).trim()
    const wrongToken = `${sessionToken.slice(0, -4)}AAAA`
    await writeFile(join(a.root, 'session-token'), `${wrongToken}\n`, { mode: 0o600 })
    seen.push((await post(a, '/snapshot')).body, JSON.stringify(await runCli(['pointer', 'get', '--config', a.config])))
    seen.push(await (await fetch(`http://127.0.0.1:${port}/status`)).text())
    await writeFile(join(a.root, 'session-token'), `${sessionToken}\n`, { mode: 0o600 })
    seen.push(JSON.stringify(await runCli(['files', '--config', a.config], { env: { ...process.env, CIDSYNC_API_KEY: `${apiKey.slice(0, -4)}zzzz` } })))
    seen.push(JSON.stringify(await runCli(['snapshot', '--config', a.config])))
    expect((await daemon.stop()).code).toBe(0)
    seen.push(daemon.stderr)

    // An embedded device too: its account file holds a wallet key and an API key.
    const embeddedDir = join(root, 'embedded-service')
    const e = await device(root, 'e', { serviceDir: embeddedDir, extra: 'log_level = "debug"\n' })
    await writeFiles(e.folder, 5, rng)
    seen.push(JSON.stringify(await ok(['snapshot', '--config', e.config])))
    const account = JSON.parse(await readFile(join(embeddedDir, 'embedded-account.json'), 'utf8')) as { walletKey?: string, apiKey?: string }

    const secrets: Record<string, string | undefined> = {
      'API key': apiKey,
      'session token': sessionToken,
      'refused session token': wrongToken,
      'wallet key': a.walletKey,
      'snapshot key': (await ok(['key', 'export', '--config', a.config])).stdout.trim(),
      'embedded snapshot key': (await ok(['key', 'export', '--config', e.config])).stdout.trim(),
      'embedded wallet key': account.walletKey,
      'embedded API key': account.apiKey,
      'admin token': await adminToken(service.dir),
      'embedded admin token': await adminToken(embeddedDir)
    }
    const text = seen.join('\n')
    const leaks = Object.entries(secrets).filter(([, v]) => v !== undefined && spellings(v).some(s => text.includes(s))).map(([k]) => k)
    expect(leaks, 'secrets found in logs, status, metrics or error messages').toEqual([])

    const skip = new Set<string>()
    const loose = [
      ...await modes(a.state, skip), ...await modes(e.state, skip), ...await modes(service.dir, skip), ...await modes(embeddedDir, skip),
      ...await modes(join(a.root, 'api-key'), skip), ...await modes(join(a.root, 'session-token'), skip)
    ]
    report('secrets', { seed: rng.seed, secretsChecked: Object.entries(secrets).filter(([, v]) => v !== undefined).map(([k]) => k), bytesSearched: text.length, leaks, looseModes: loose.map(l => l.replace(root, '')) })
    expect(loose, 'files not 0600 or directories not 0700').toEqual([])
  })
})
