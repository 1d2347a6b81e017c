import { describe, expect, it, vi } from 'vitest'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import pino from 'pino'
import { loadConfig } from '../../src/config/index.js'
import { DEVICE_ID_FILE, indexPath, openIndex } from '../../src/index/index.js'
import { publish, Repository, SyncStore } from '../../src/sync/index.js'
import { localServiceUnderTest, EXTERNAL } from '../helpers/service.js'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { cliDevice, ls, ok, publishCid, sha, shareKey, type HistoryRow } from './v2-cli.js'

describe.skipIf(EXTERNAL)('cidsync history and restore --at/--cid (processes)', () => {
  it('history lists the chain newest first and a second run reads old manifests from the local cache', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await cliDevice(root, service, 'a')
    const b = await cliDevice(root, service, 'b')
    await shareKey(a, b)
    const cids: string[] = []
    for (let i = 0; i < 3; i++) {
      await writeFile(join(a.folder, `n-${i}.md`), `note ${i}`)
      cids.push(await publishCid(a))
    }
    const gateway = (): number => service.local.requestLog().filter(r => r.route === 'gateway').length
    let before = gateway()
    const rows = JSON.parse((await ok(b, ['history', '--json'])).stdout) as HistoryRow[]
    expect(gateway() - before).toBe(3)
    expect(rows.map(r => r.cid)).toEqual([...cids].reverse())
    expect(rows.map(r => r.entries)).toEqual([3, 2, 1])
    expect(rows.map(r => r.previous)).toEqual([cids[1], cids[0], null])
    const times = rows.map(r => Date.parse(r.at))
    expect(times[0]).toBeGreaterThanOrEqual(times[1] as number)
    expect(times[1]).toBeGreaterThanOrEqual(times[2] as number)
    for (const r of rows) expect(r.bytesAdded).toBeGreaterThan(0)
    const deviceId = (await readFile(join(a.state, DEVICE_ID_FILE), 'utf8')).trim()
    for (const r of rows) expect(r.device).toBe(deviceId)

    before = gateway()
    const text = await ok(b, ['history'])
    expect(gateway() - before).toBe(0)
    const lines = text.stdout.trim().split('\n')
    expect(lines[0]).toMatch(/^TIME\s+DEVICE\s+ENTRIES\s+ADDED\s+.*CID/)
    expect(lines.slice(1, 4).map(l => l.split(/\s+/).at(-1))).toEqual([...cids].reverse())
    expect(lines.at(-1)).toBe('3 publishes')
    // --limit stops early and says there is more.
    const limited = await ok(b, ['history', '--limit', '2'])
    expect(limited.stdout).toContain('(more before: --limit 4)')
    // --reverse: the same publishes, oldest first, as `log --reverse`.
    const reversed = JSON.parse((await ok(b, ['history', '--json', '--reverse'])).stdout) as HistoryRow[]
    expect(reversed.map(r => r.cid)).toEqual(cids)
    expect((await ok(b, ['history', '--reverse', '--limit', '2'])).stdout).toContain('(more before: --limit 4)')
  })
  it('restore --at an age, a time before the first publish (exit 3, ERR_NOTHING_AT_TIME), and --cid a manifest', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await cliDevice(root, service, 'a')
    const b = await cliDevice(root, service, 'b')
    await shareKey(a, b)
    // A publish made three hours ago, by a device of the same key (published in this process, its clock set back).
    const old = await cliDevice(root, service, 'old')
    await shareKey(a, old)
    await mkdir(old.state, { recursive: true })
    const oldConfig = loadConfig({ configPath: old.config, env: {} })
    const index = openIndex(indexPath(oldConfig.stateDir))
    const OLD = 'dddddddd-0000-4000-8000-000000000000'
    index.entries.registerDevice(OLD, 'old')
    index.entries.apply(OLD, [{ kind: 'upsert', folder: 'notes', path: 'ancient.md', size: 1, mtimeMs: 1, cid: 'cid-ancient', cidProfile: 'kubo-cidv1' }])
    const store = new SyncStore(oldConfig.stateDir)
    vi.useFakeTimers({ toFake: ['Date'] })
    let oldCid: string
    try {
      vi.setSystemTime(Date.now() - 3 * 3_600_000)
      oldCid = (await publish({ index, logger: pino({ level: 'silent' }), deviceId: OLD, repository: new Repository(oldConfig, service.clients, { store }) })).cid
    } finally {
      vi.useRealTimers()
      store.close()
      index.close()
    }
    await writeFile(join(a.folder, 'new.md'), 'new')
    const latest = await publishCid(a)

    const twoHours = await ok(b, ['restore', '--at', '2h', '--json'])
    expect(JSON.parse(twoHours.stdout)).toMatchObject({ cid: oldCid, publish: { device: OLD, entries: 1 } })
    expect((await ls(b)).map(r => r.split(':')[1])).toEqual(['ancient.md'])

    const before = await sha(join(b.state, 'index.sqlite'))
    const nothing = await b.run(['restore', '--at', '4h', '--force'])
    expect(nothing.code).toBe(3)
    expect(nothing.stderr).toContain('ERR_NOTHING_AT_TIME')
    expect(nothing.stderr).toContain('cidsync history')
    expect(nothing.stderr).toContain(`its oldest publish is of`)
    expect(nothing.stderr).not.toContain('forget')
    expect(await sha(join(b.state, 'index.sqlite'))).toBe(before)

    expect(JSON.parse((await ok(b, ['restore', '--force', '--json'])).stdout)).toMatchObject({ cid: latest })
    expect(await ls(b)).toEqual(await ls(a))
    expect(JSON.parse((await ok(b, ['restore', '--force', '--json', '--cid', oldCid])).stdout)).toMatchObject({ cid: oldCid })
    expect((await ls(b)).map(r => r.split(':')[1])).toEqual(['ancient.md'])
    // An age between the two publishes: the old one; a dry run changes nothing.
    const dry = await ok(b, ['restore', '--dry-run', '--at', '1h'])
    expect(dry.stdout).toContain(`would install ${oldCid}`)
    expect(dry.stdout).toContain('nothing was changed')
  })
})

describe.skipIf(EXTERNAL)('restore --force on the same device (processes)', () => {
  it('keeps the deals this device asked for: history\'s DEAL column stays pending', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), dealDelayMs: 3_600_000 })
    const a = await cliDevice(root, service, 'a', 'deal = true\n')
    await writeFile(join(a.folder, 'one.md'), 'one')
    const cid = await publishCid(a)
    const dealOf = async (): Promise<string | undefined> =>
      (JSON.parse((await ok(a, ['history', '--json'])).stdout) as Array<HistoryRow & { deal: string }>).find(r => r.cid === cid)?.deal
    expect(await dealOf()).toBe('pending')
    await ok(a, ['restore', '--force'])
    expect(await dealOf()).toBe('pending')
  }, 120_000)
})

describe.skipIf(EXTERNAL)('history after a forget (processes)', () => {
  it('a publish linked anew shows the deal asked for under the CID it was made with', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), dealDelayMs: 3_600_000 })
    const a = await cliDevice(root, service, 'a', 'deal = true\n')
    for (let hour = 1; hour <= 3; hour++) {
      await writeFile(join(a.folder, `h${hour}.md`), `hour ${hour}`)
      const published = await a.run(['snapshot'], { CIDSYNC_TEST_CLOCK: `2026-03-01T0${hour}:00:00.000Z` })
      expect(published.code, published.stderr).toBe(0)
    }
    await writeFile(a.config, `${await readFile(a.config, 'utf8')}[retention]\nkeep_last = 1\nkeep_within = "1h"\n`)
    await ok(a, ['forget'])
    const rows = JSON.parse((await ok(a, ['history', '--json'])).stdout) as Array<HistoryRow & { deal: string, publishedAs?: string }>
    expect(rows).toHaveLength(2)
    expect(rows[0]?.publishedAs).toBeDefined()
    expect(rows.map(r => r.deal)).toEqual(['pending', 'pending'])
  }, 120_000)
})

describe('cidsync history --help', () => {
  it('names every value the DEAL column shows, the ? of a device with no index included', async () => {
    const help = await runCli(['history', '--help'])
    expect(help.code, help.stderr).toBe(0)
    for (const value of ['made', 'pending', 'overdue', 'none']) expect(help.stdout).toContain(value)
    expect(help.stdout).toContain('? when this device has no index yet')
  })
})
