import { describe, expect, it, onTestFinished } from 'vitest'
import { existsSync } from 'node:fs'
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises'
import { createServer, request } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { DirectoryObjectStore } from '../../src/store/index.js'
import { EXTERNAL } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentObjects, ok, shareKey, tree, writeSomeFiles } from './content-devices.js'
import { exitDevice, freshService, historyOf } from '../exits/exit-devices.js'

/**
 * A gateway in front of the service that flips one byte of `/ipfs/<victim>`'s body, every time;
 * everything else goes through as it is.
 */
async function lyingGateway (upstream: string, victim: string): Promise<string> {
  const target = new URL(upstream)
  const server = createServer((req, res) => {
    const lie = (req.url ?? '').startsWith(`/ipfs/${victim}`)
    const forward = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: { ...req.headers, host: target.host } }, answer => {
      res.writeHead(answer.statusCode ?? 502, answer.headers)
      let first = lie
      answer.on('data', (chunk: Buffer) => {
        if (first && chunk.byteLength > 0) { chunk[0] = (chunk[0] ?? 0) ^ 0xff; first = false }
        res.write(chunk)
      })
      answer.on('end', () => { res.end() })
    })
    forward.on('error', () => { res.destroy() })
    req.pipe(forward)
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  onTestFinished(async () => { server.closeAllConnections(); await new Promise(resolve => server.close(resolve)) })
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

interface DoneLine { type: string, dir: string, publish: string, root: string, written: number, present: number, objects: number, bytes: number, pointer: string }

describe.skipIf(EXTERNAL)('cidsync export --dir PATH', () => {
  it('fills a directory that a fresh device on another service restores from, index and files byte for byte; a second export adds only what is new', async () => {
    const root = await useTempDir()
    const one = await freshService(root, 'one')
    const two = await freshService(root, 'two')
    const a = await exitDevice(root, one, 'a')
    await writeSomeFiles(a.folder, 'first', { largeBytes: 1024 * 1024 + 5, small: 10 })
    await ok(a, ['snapshot'])
    const usb = join(root, 'usb')

    const exported = await ok(a, ['export', '--dir', usb, '--content', '--json'])
    const lines = exported.stdout.trim().split('\n').map(l => JSON.parse(l) as { type: string, cid: string, written: boolean })
    const done = lines.at(-1) as unknown as DoneLine
    const [head] = await historyOf(a)
    expect(done).toMatchObject({ type: 'done', dir: usb, publish: head?.cid, present: 0, pointer: 'moved' })
    expect(done.written).toBe(done.objects)
    const objects = lines.filter(l => l.type === 'object')
    expect(objects.length).toBe(done.objects)
    expect(objects.every(l => l.written)).toBe(true)
    for (const object of contentObjects(a)) expect(objects.some(l => l.cid === object), `${object} was exported`).toBe(true)

    // A fresh device with the key, on a service that never saw this history: the directory alone.
    const c = await exitDevice(root, two, 'c')
    await shareKey(a, c)
    // No index yet: the one to install is the directory's, and the message says how.
    const early = await c.run(['get', 'notes/first/small-3.txt', '--from', usb])
    expect(early.code, early.stderr).toBe(3)
    expect(early.stderr).toContain(`install the one it holds first (cidsync restore --from ${usb}) [ERR_INDEX_MISSING]`)
    const restored = await ok(c, ['restore', '--from', usb])
    expect(restored.stdout).toContain(`from directory ${usb}`)
    expect(restored.stdout).not.toContain('content objects sampled')
    const back = join(root, 'back')
    await ok(c, ['restore', '--files', '--from', usb, '--to', back])
    expect(await tree(join(back, 'notes'))).toEqual(await tree(a.folder))
    const got = join(root, 'got')
    await ok(c, ['get', 'notes/first/small-3.txt', '--from', usb, '--to', got])
    expect((await readFile(join(got, 'notes', 'first', 'small-3.txt'))).equals(await readFile(join(a.folder, 'first', 'small-3.txt')))).toBe(true)

    // The history reads from the directory alone too: the primary of c never saw it.
    const history = JSON.parse((await ok(c, ['history', '--from', usb, '--json'])).stdout) as Array<{ cid: string }>
    expect(history.map(h => h.cid)).toEqual([head?.cid])
    const primaryOnly = await c.run(['history'])
    expect(primaryOnly.code, primaryOnly.stderr).toBe(3)
    const timeline = JSON.parse((await ok(c, ['log', 'notes/first/small-3.txt', '--from', usb, '--json'])).stdout) as { publishesKept: number, segmentsFetched: number, versions: Array<{ fetchable: boolean }> }
    expect(timeline).toMatchObject({ publishesKept: 1, segmentsFetched: 1 })
    expect(timeline.versions.map(v => v.fetchable)).toEqual([true])
    const found = JSON.parse((await ok(c, ['find', 'small-3', '--at', new Date().toISOString(), '--from', usb, '--json'])).stdout) as { publish: { cid: string }, results: Array<{ path: string }> }
    expect(found.publish.cid).toBe(head?.cid)
    expect(found.results.map(r => r.path)).toEqual(['first/small-3.txt'])
    expect((await c.run(['find', 'small-3', '--from', usb])).code).toBe(2)

    // An export without --content holds the index alone: the restore from it says so.
    const bare = join(root, 'bare')
    await ok(a, ['export', '--dir', bare])
    const fromBare = await ok(c, ['restore', '--from', bare, '--force'])
    expect(fromBare.stdout).toContain(`But ${bare} holds none of the content objects sampled (an export without --content?)`)

    // A second publish: only what is new is written, and said so.
    await writeFile(join(a.folder, 'first', 'new.txt'), 'one more\n')
    await ok(a, ['snapshot'])
    const again = await ok(a, ['export', '--dir', usb, '--content'])
    expect(again.stdout).toMatch(new RegExp(`: 2 publishes, .*; written [1-9]\\d*, already there ${done.objects};.*its pointer moved there`))
  }, 600_000)

  it('refuses --car with --dir, neither, and a directory holding other files; a lying gateway fails it (exit 4) before the pointer is written; a kill before the pointer leaves none', async () => {
    const root = await useTempDir()
    const one = await freshService(root, 'one')
    const a = await exitDevice(root, one, 'a')
    await writeSomeFiles(a.folder, 'first', { largeBytes: 300 * 1024, small: 4 })
    await ok(a, ['snapshot'])

    const both = await a.run(['export', '--car', join(root, 'x.car'), '--dir', join(root, 'x')])
    expect(both.code, both.stderr).toBe(2)
    expect(both.stderr).toContain('give exactly one of --car FILE (a CAR file) and --dir PATH (a directory store) [ERR_USAGE]')
    expect(existsSync(join(root, 'x'))).toBe(false)
    const neither = await a.run(['export'])
    expect(neither.code, neither.stderr).toBe(2)

    const photos = join(root, 'photos')
    await mkdir(photos)
    await writeFile(join(photos, 'cat.jpg'), 'a cat')
    const mixed = await a.run(['export', '--dir', photos])
    expect(mixed.code, mixed.stderr).toBe(2)
    expect(mixed.stderr).toContain('holds files and is not a cidsync directory store')
    expect(mixed.stderr).toContain('[ERR_DIRECTORY_STORE]')
    expect(await readdir(photos)).toEqual(['cat.jpg'])

    // A gateway that lies about one content object: named, exit 4, and the directory has no pointer.
    const [victim] = [...contentObjects(a)]
    const config = await readFile(a.config, 'utf8')
    await writeFile(a.config, config.replace(/^gateways = .*$/m, `gateways = ["${await lyingGateway(one.local.url, victim ?? '')}"]`))
    const usb = join(root, 'usb')
    const lied = await a.run(['export', '--dir', usb, '--content'])
    expect(lied.code, lied.stderr).toBe(4)
    expect(lied.stderr).toContain(`content ${victim ?? '?'}`)
    expect(lied.stderr).toContain('the directory\'s pointer was not moved [ERR_INTEGRITY]')
    expect(existsSync(join(usb, 'pointers.json'))).toBe(false)
    expect(await (await DirectoryObjectStore.open(usb)).has(victim ?? '')).toBe(false)
    await writeFile(a.config, config)

    // Killed once every object is in place, just before the pointer: still none, until run again.
    const killed = await a.run(['export', '--dir', usb, '--content'], { CIDSYNC_FAILPOINT: 'export:before-pointer' })
    expect(killed.signal).toBe('SIGKILL')
    expect(existsSync(join(usb, 'pointers.json'))).toBe(false)
    const whole = await ok(a, ['export', '--dir', usb, '--content'])
    expect(whole.stdout).toContain('its pointer moved there')
  }, 600_000)
})
