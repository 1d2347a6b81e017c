import { describe, expect, it, onTestFinished } from 'vitest'
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { readFile, writeFile } from 'node:fs/promises'
import { EXTERNAL } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until, within } from '../helpers/wait.js'
import { ok, writeSomeFiles } from '../cli/content-devices.js'
import { exitDevice, freshService, pointerOf } from './exit-devices.js'

/** A deal service that answers every `add_cid` but holds the first until released: the import's deal step, as long as a test needs. */
async function heldDealService (): Promise<{ url: string, asked: () => number, release: () => void }> {
  let asked = 0
  const held: ServerResponse[] = []
  let released = false
  const answer = (res: ServerResponse): void => { res.writeHead(200, { 'content-type': 'application/json' }); res.end('{"message":"cid added for deal"}') }
  const server = createServer((req, res) => {
    req.resume()
    asked++
    if (asked === 1 && !released) held.push(res)
    else answer(res)
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  onTestFinished(async () => { server.closeAllConnections(); await new Promise(resolve => server.close(resolve)) })
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    asked: () => asked,
    release: () => { released = true; for (const res of held.splice(0)) answer(res) }
  }
}

describe.skipIf(EXTERNAL)('import --car against a device publishing meanwhile', () => {
  it('a publish made while the import asked for deals is not overwritten: the import stops (ERR_IMPORT_OLDER), the pointer keeps that publish', async () => {
    const root = await useTempDir()
    const one = await freshService(root, 'one')
    const a = await exitDevice(root, one, 'a')
    await writeSomeFiles(a.folder, 'first', { largeBytes: 200 * 1024, small: 3 })
    await ok(a, ['snapshot'])
    const car = join(root, 'a.car')
    await ok(a, ['export', '--car', car])

    const two = await freshService(root, 'two')
    const deals = await heldDealService()
    const c = await exitDevice(root, two, 'c')
    // Deals asked (the default), of a deal service the test holds: the import's window between its pointer check and its PUT.
    const config = await readFile(c.config, 'utf8')
    await writeFile(c.config, config.replace('deal = false', 'deal = true').replace(/^deal_url = ".*"$/m, `deal_url = "${deals.url}"`))
    const exported = await ok(a, ['key', 'export'])
    const { runCli } = await import('../helpers/cli.js')
    expect((await runCli(['key', 'import', '--config', c.config], { input: exported.stdout, env: c.env })).code).toBe(0)
    const e = await exitDevice(root, two, 'e')
    await writeSomeFiles(e.folder, 'other', { largeBytes: 10, small: 2 })

    const importing = c.run(['import', '--car', car])
    await until(() => deals.asked() > 0 ? true : undefined, 60_000, 'the import to ask for its first deal')
    // Another device of the account publishes while the import waits on its deals.
    await ok(e, ['snapshot'])
    const published = await pointerOf(e)
    expect(published).not.toBe(null)
    deals.release()
    const result = await within(importing, 120_000, 'the import to end')
    expect(result.code, result.stderr).toBe(1)
    expect(result.stderr).toContain('[ERR_IMPORT_OLDER]')
    expect(await pointerOf(c)).toBe(published)
  }, 300_000)
})
