import { describe, expect, it } from 'vitest'
import { access } from 'node:fs/promises'
import { join } from 'node:path'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import { openManifest, sealManifest, type Manifest } from '../../src/snapshot/index.js'
import { SnapshotFormatError } from '../../src/errors.js'
import { useTempDir } from '../helpers/temp-dir.js'

const A = 'aaaaaaaa-0000-4000-8000-000000000000'

async function cidOf (text: string): Promise<string> {
  return CID.createV1(0x55, await sha256.digest(new TextEncoder().encode(text))).toString()
}

async function manifest (): Promise<Manifest> {
  const base = await cidOf('base')
  return {
    version: 2,
    createdAt: '2026-11-23T19:00:00.000Z',
    device: A,
    hostname: 'laptop',
    previous: null,
    entries: 3,
    devices: [{ deviceId: A, hostname: 'laptop', firstSeen: 1, lastSeq: 3, segments: [{ cid: base, kind: 'base', from: 0, to: 3, entries: 3, bytes: 100 }] }],
    added: [base],
    bytesAdded: 100,
    namespace: 'default',
    network: 'mainnet'
  }
}

describe('sealing a manifest', () => {
  it('publishes nothing a reader would refuse: a broken chain or a device name with escapes is refused before a byte is written', async () => {
    const dir = await useTempDir()
    const good = await manifest()
    const sealed = await sealManifest({ path: join(dir, 'good.manifest'), manifest: good, encryption: 'aes-256-gcm', stateDir: dir })
    expect(await openManifest({ path: sealed.path, name: 'good', stateDir: dir })).toEqual(good)

    // A list that starts with a delta: no reader could rebuild the device's rows from it.
    const brokenChain: Manifest = { ...good, devices: good.devices.map(d => ({ ...d, segments: d.segments.map(s => ({ ...s, kind: 'delta' as const })) })) }
    const escapes: Manifest = { ...good, device: 'laptop\u001b[2J' }
    for (const [name, bad] of [['chain', brokenChain], ['escapes', escapes]] as const) {
      const path = join(dir, `${name}.manifest`)
      await expect(sealManifest({ path, manifest: bad, encryption: 'aes-256-gcm', stateDir: dir })).rejects.toBeInstanceOf(SnapshotFormatError)
      await expect(access(path)).rejects.toThrow()
    }
  })
})
