import { describe, it, expect, afterEach } from 'vitest'
import { readdir } from 'node:fs/promises'
import { createServiceClients, type ServiceClients } from '../../../src/remote/index.js'
import { bytesCid, cidProfile } from '../../../src/content/index.js'
import { IntegrityError } from '../../../src/errors.js'
import { readPublish } from '../../../src/sync/index.js'
import { ScriptedServer } from '../../helpers/scripted-server.js'
import { useTempDir } from '../../helpers/temp-dir.js'

const open: ServiceClients[] = []
afterEach(async () => { for (const c of open.splice(0)) await c.close() })

function clientsOf (url: string): ServiceClients {
  const clients = createServiceClients({ dealUrl: url, apiUrl: url, pointerUrl: url, uploadUrl: url, gateways: [url] }, { apiKey: () => undefined, sessionToken: () => undefined }, { retry: { attempts: 1 } })
  open.push(clients)
  return clients
}

const nothingCached = { get: () => undefined, put: () => {} }
const MIB = 1024 * 1024

describe('what a publish may weigh', () => {
  it('stops junk named as a publish after its first few KiB: nothing of it reaches the state dir', async () => {
    // 64 KiB pieces, 300 MiB in all if nothing stopped it.
    const server = await new ScriptedServer().answer({ status: 200, body: 'junk '.repeat(13_108), repeat: 4800 }).listen()
    const stateDir = await useTempDir()
    const cid = bytesCid(Buffer.from('a manifest'), cidProfile('kubo-cidv1')).toString()
    const err = await readPublish(clientsOf(server.url), cid, nothingCached, { stateDir, dir: stateDir, label: 'verify' }).catch((e: unknown) => e) as Error
    expect(err).toBeInstanceOf(IntegrityError)
    expect(err.message).toMatch(/no gateway gave the bytes of .*not a cidsync snapshot \(wrong magic\)/)
    // What sockets buffer between the server and the client, not the 300 MiB.
    expect(server.written).toBeLessThan(32 * MIB)
    expect(await readdir(stateDir)).toEqual([])
  })
})
