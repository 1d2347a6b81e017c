import { expect } from 'vitest'
import { createHash } from 'node:crypto'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { readPublish } from '../../src/sync/index.js'
import type { Manifest } from '../../src/snapshot/index.js'
import { runCli, type CliResult } from '../helpers/cli.js'
import type { ServiceUnderTest } from '../helpers/service.js'

/**
 * A device run as processes against a local service the test started (so its request log counts
 * what the CLI fetched), for the cidsync-sqlite/2 CLI tests.
 */
export interface CliDevice { name: string, config: string, state: string, folder: string, run: (args: string[], env?: NodeJS.ProcessEnv) => Promise<CliResult> }

export type LocalService = ServiceUnderTest & { local: NonNullable<ServiceUnderTest['local']> }

export const INCREMENTAL = 'deal = false\ncompact_after_deltas = 100\ncompact_fraction = 100\n'

export async function cliDevice (root: string, service: LocalService, name: string, snapshot = INCREMENTAL): Promise<CliDevice> {
  const url = service.local.url
  const folder = join(root, name, 'notes')
  await mkdir(folder, { recursive: true })
  const config = join(root, `${name}.toml`)
  await writeFile(config, `state_dir = "${name}/state"\nnamespace = "cli-v2"\n[[folders]]\nname = "notes"\npath = "${name}/notes"\n[status]\nlisten = "127.0.0.1:0"\n` +
    `[service]\nmode = "remote"\ndeal_url = "${url}"\napi_url = "${url}"\npointer_url = "${url}"\nupload_url = "${url}"\ngateways = ["${url}"]\n[snapshot]\n${snapshot}`)
  const env = { ...process.env, CIDSYNC_API_KEY: service.apiKey, CIDSYNC_SESSION_TOKEN: service.local.issueToken(service.address) }
  return {
    name, config, state: join(root, name, 'state'), folder,
    run: async (args, extra = {}) => await runCli([...args, '--config', config], { env: { ...env, ...extra }, timeoutMs: 60_000 })
  }
}

export async function ok (d: CliDevice, args: string[]): Promise<CliResult> {
  const result = await d.run(args)
  expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0)
  return result
}

export async function shareKey (from: CliDevice, to: CliDevice): Promise<void> {
  const exported = await ok(from, ['key', 'export'])
  const imported = await runCli(['key', 'import', '--config', to.config], { input: exported.stdout })
  expect(imported.code, imported.stderr).toBe(0)
}

/** Every device's files as `ls --all-devices` shows them. */
export const ls = async (d: CliDevice): Promise<string[]> =>
  (JSON.parse((await ok(d, ['ls', '--all-devices', '--json'])).stdout) as Array<{ device: string, path: string, cid: string }>).map(e => `${e.device.slice(0, 8)}:${e.path}:${e.cid}`).sort()

export interface HistoryRow { cid: string, engine: string, at: string, device: string, entries: number, bytesAdded: number, previous: string | null }

export const sha = async (path: string): Promise<string> => createHash('sha256').update(await readFile(path)).digest('hex')

export const publishCid = async (d: CliDevice): Promise<string> => (JSON.parse((await ok(d, ['snapshot', '--json'])).stdout) as { cid: string }).cid

/** A manifest read through the gateways with `d`'s key, not cached. */
export async function manifestAt (service: LocalService, d: CliDevice, dir: string, cid: string): Promise<Manifest> {
  const { manifest } = await readPublish(service.clients, cid, { get: () => undefined, put: () => {} }, { stateDir: d.state, dir, label: 'm' })
  if (manifest === undefined) throw new Error(`${cid} is not a manifest`)
  return manifest
}
