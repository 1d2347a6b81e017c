import { expect } from 'vitest'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { ChildProcess } from 'node:child_process'
import { createServiceClients, type ServiceClients } from '../../src/remote/index.js'
import { cidProfile } from '../../src/content/index.js'
import { runCli } from '../helpers/cli.js'
import { bound } from '../helpers/wait.js'
import { ok, post, remoteDevice, serviceProcess, type Device } from '../proof/harness.js'

/** A `cidsync local-service` process, restartable on the same port and dir (a NAS that goes down and comes back). */
export interface ServiceHome { url: string, dir: string, child: ChildProcess }

export async function startHome (dir: string, url?: string): Promise<ServiceHome> {
  const listen = url === undefined ? [] : ['--listen', new URL(url).host]
  return await serviceProcess(dir, ['--deal-delay-ms', '100', ...listen])
}

/** Stops a service process and waits for it to be gone (its port free). */
export async function stopHome (home: ServiceHome): Promise<void> {
  if (home.child.exitCode !== null || home.child.signalCode !== null) return
  const gone = new Promise<void>(resolve => home.child.once('close', () => resolve()))
  home.child.kill('SIGTERM')
  const timer = setTimeout(() => home.child.kill('SIGKILL'), bound(10_000))
  await gone
  clearTimeout(timer)
}

/** Kept: a storing folder beside notes; schedules that never fire on their own. */
export const MIRROR_EXTRA = (mirrorUrl: string, more = ''): string =>
  '[snapshot]\nschedule = "0 0 1 1 *"\nquiet_seconds = 86400\nmin_interval_seconds = 0\ndeal = true\n[reconcile]\nschedule = "0 0 1 1 *"\n[verify]\nschedule = ""\n' +
  '[[folders]]\nname = "kept"\npath = "kept"\nstore = true\n' +
  `[[mirrors]]\nname = "nas"\nurl = "${mirrorUrl}"\n${more}`

export type MirrorDevice = Device & { address: string, walletKey: string, kept: string }

/** A device on `primary` with `mirror` as its mirror "nas", signed in to both (`login --mirror`). */
export async function mirroredDevice (root: string, name: string, primary: ServiceHome, mirror: ServiceHome, more = ''): Promise<MirrorDevice> {
  const d = await remoteDevice(root, name, primary, { extra: MIRROR_EXTRA(mirror.url, more) })
  const kept = join(d.root, 'kept')
  await mkdir(kept, { recursive: true })
  await signInMirror(d, mirror)
  return { ...d, kept }
}

export async function signInMirror (d: Device & { address: string, walletKey: string }, mirror: ServiceHome): Promise<void> {
  const token = (await ok(['local-service', 'token', '--user', d.address, '--dir', mirror.dir])).stdout.trim()
  await writeFile(join(d.root, 'mirror-wallet'), d.walletKey, { mode: 0o600 })
  await writeFile(join(d.root, 'mirror-token'), token, { mode: 0o600 })
  // The primary's wallet, on the test's own mirror: --same-wallet (a mirror run by another could relay its signature).
  const login = await runCli(['login', '--config', d.config, '--mirror', 'nas', '--wallet-key-file', join(d.root, 'mirror-wallet'), '--session-token-file', join(d.root, 'mirror-token'), '--same-wallet'])
  expect(login.code, login.stderr).toBe(0)
  expect(login.stdout).toContain('mirror nas: signed in as')
}

/** Publishes through the daemon; answers the snapshot CID. */
export async function publishNow (d: Device): Promise<string> {
  const answer = await post(d, '/snapshot')
  expect(answer.status, answer.body).toBe(200)
  return (JSON.parse(answer.body) as { cid: string }).cid
}

/** Clients of a home with no credentials: its gateway is all a check needs. */
export function gatewayOf (home: ServiceHome): ServiceClients {
  return createServiceClients({ dealUrl: home.url, apiUrl: home.url, pointerUrl: home.url, uploadUrl: home.url, gateways: [home.url] }, { apiKey: () => undefined, sessionToken: () => undefined }, { retry: { attempts: 1 } })
}

/** Whether `home` gives the bytes of `cid` (verified against it). */
export async function holds (home: ServiceHome, cid: string, dir: string): Promise<boolean> {
  const clients = gatewayOf(home)
  try {
    await clients.objects.getFile(cid, cidProfile('kubo-cidv1'), join(dir, `held-${cid}`))
    return true
  } catch {
    return false
  } finally {
    await clients.close()
  }
}
