import { describe, expect, it, onTestFinished } from 'vitest'
import { createServer, request, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok, shareKey, type ContentDevice } from './content-devices.js'

/** A proxy before the service that answers every pointer read with `answer`, and passes the rest on. */
async function pointerProxy (target: string, answer: (res: ServerResponse) => void): Promise<{ url: string, pointerReads: () => number }> {
  const to = new URL(target)
  let reads = 0
  const server = createServer((req, res) => {
    if (req.method === 'GET' && (req.url ?? '').startsWith('/v1/pointers/current')) { reads++; req.resume(); answer(res); return }
    const up = request({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers: { ...req.headers, host: to.host } }, (a) => { res.writeHead(a.statusCode ?? 502, a.headers); a.pipe(res) })
    up.on('error', () => { res.destroy() })
    req.pipe(up)
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  onTestFinished(async () => {
    server.closeAllConnections()
    await new Promise(resolve => server.close(resolve))
  })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, pointerReads: () => reads }
}

/** Device a publishes notes/todo.txt ("first"); device b, with a's key, installs that index. */
async function joined (): Promise<{ root: string, service: Awaited<ReturnType<typeof localServiceUnderTest>>, a: ContentDevice, b: ContentDevice }> {
  const root = await useTempDir()
  const service = await localServiceUnderTest({ dir: join(root, 'service') })
  const a = await contentDevice(root, service, 'a')
  const b = await contentDevice(root, service, 'b')
  await writeFile(join(a.folder, 'todo.txt'), 'first\n')
  await ok(a, ['snapshot'])
  await shareKey(a, b)
  await ok(b, ['restore'])
  return { root, service, a, b }
}

describe.skipIf(EXTERNAL)('get and restore --files on a device whose index is behind the pointer', () => {
  it('say which device published newer rows, bring them back with --at now, and say nothing once this device took them in', async () => {
    const { root, a, b } = await joined()
    // Into a directory aside: a copy in b's folder would be b's own, newer row once b indexes it.
    await ok(b, ['get', 'notes/todo.txt', '--to', join(root, 'first')])
    expect(await readFile(join(root, 'first', 'notes', 'todo.txt'), 'utf8')).toBe('first\n')

    // a changes the file and publishes; b's index still holds the first version.
    await writeFile(join(a.folder, 'todo.txt'), 'second\n')
    await ok(a, ['snapshot'])
    const stale = await ok(b, ['get', 'notes/todo.txt', '--to', join(root, 'stale')])
    expect(stale.stderr).toMatch(/note: the pointer's publish of \S+ holds changes of .*\(.{36}\) that this index has not taken in/)
    expect(stale.stderr).toContain('`--at now`')
    expect(await readFile(join(root, 'stale', 'notes', 'todo.txt'), 'utf8')).toBe('first\n')
    const lines = (await ok(b, ['restore', '--files', '--dry-run', '--json'])).stdout.trim().split('\n').map(l => JSON.parse(l) as { type?: string, note?: string, devices?: unknown[] })
    expect(lines.find(l => l.type === 'note')).toMatchObject({ note: 'pointer-ahead', devices: [expect.objectContaining({ hostname: expect.any(String) as unknown })] })

    // A file new on a: not in b's index, and b is told where it may be, not only that it is absent.
    await writeFile(join(a.folder, 'new.txt'), 'new\n')
    await ok(a, ['snapshot'])
    const absent = await b.run(['get', 'notes/new.txt'])
    expect(absent.code).toBe(3)
    expect(absent.stderr).toMatch(/note: the pointer's publish of \S+ holds changes of .* that this index has not taken in[^\n]*`--at now`/)
    expect(absent.stderr).toMatch(/"notes\/new\.txt": not in the index/)

    await ok(b, ['get', 'notes/todo.txt', '--at', 'now', '--to', join(root, 'now')])
    expect(await readFile(join(root, 'now', 'notes', 'todo.txt'), 'utf8')).toBe('second\n')

    // b takes a's rows in at its own publish: no note, and the newest version.
    await ok(b, ['snapshot'])
    const current = await ok(b, ['get', 'notes/todo.txt'])
    expect(current.stderr).not.toContain('note:')
    expect(await readFile(join(b.folder, 'todo.txt'), 'utf8')).toBe('second\n')
    // Its own rows never count: a publishes nothing new, and a's get says nothing either.
    expect((await ok(a, ['get', 'notes/todo.txt'])).stderr).not.toContain('note:')
  }, 300_000)

  it('a file the pointer\'s publish holds, brought back with --at now, is kept with a reason that allows for it', async () => {
    const { a, b } = await joined()
    await writeFile(join(a.folder, 'todo.txt'), 'second\n')
    await ok(a, ['snapshot'])
    await ok(b, ['get', 'notes/todo.txt', '--at', 'now'])
    // A plain get reads the index, which holds the first: the newer file stays, not called a local change for sure.
    const plain = await b.run(['get', 'notes/todo.txt'])
    expect(await readFile(join(b.folder, 'todo.txt'), 'utf8')).toBe('second\n')
    expect(plain.stderr).toContain('no publish in this index holds (a local change, or a publish not taken in yet)')
  }, 300_000)

  it('a pointer service that answers 429 with a long Retry-After does not hold the files up: one read, no retries', async () => {
    const { root, service, b } = await joined()
    // Only the pointer service misbehaves: the gateway is fine.
    const proxy = await pointerProxy(service.local.url, (res) => { res.writeHead(429, { 'retry-after': '20', 'content-type': 'application/json' }); res.end('{"error":"slow down"}') })
    await writeFile(b.config, (await readFile(b.config, 'utf8')).replace(/pointer_url = "[^"]*"/, `pointer_url = "${proxy.url}"`))
    const got = await ok(b, ['get', 'notes/todo.txt', '--to', join(root, 'out')])
    expect(await readFile(join(root, 'out', 'notes', 'todo.txt'), 'utf8')).toBe('first\n')
    // The note's read gave up at its deadline, within the first wait: the client's retries would have asked five times.
    expect(proxy.pointerReads()).toBe(1)
    expect(got.stderr).not.toContain('note:')
  }, 300_000)
})
