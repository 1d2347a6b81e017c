import { describe, expect, it } from 'vitest'
import { appendFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { servicePointer } from './retention-devices.js'
import { cliDevice, ok, type CliDevice, type HistoryRow } from './v2-cli.js'

const history = async (d: CliDevice): Promise<HistoryRow[]> => JSON.parse((await ok(d, ['history', '--json'])).stdout) as HistoryRow[]

interface ForgetJson { dryRun: boolean, kept: number, forgotten: number, head: string | null, publishes: Array<{ cid: string, keep: boolean, reasons: string[] }> }

describe.skipIf(EXTERNAL)('cidsync forget', () => {
  it('refuses without [retention]; --dry-run changes nothing; killed before the move, the chain is whole; run again, history holds the kept ones', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await cliDevice(root, service, 'a')
    for (let hour = 1; hour <= 4; hour++) {
      await writeFile(join(a.folder, `h${hour}.md`), `hour ${hour}`)
      const published = await a.run(['snapshot'], { CIDSYNC_TEST_CLOCK: `2026-03-01T0${hour}:00:00.000Z` })
      expect(published.code, published.stderr).toBe(0)
    }
    const before = await history(a)
    expect(before).toHaveLength(4)

    const refused = await a.run(['forget'])
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain('no [retention]')
    // init refuses a config that exists: the table to copy is named instead.
    expect(refused.stderr).toContain('docs/retention.md, "The policy `init` writes", has a table to copy')

    await appendFile(a.config, '[retention]\nkeep_last = 2\n')
    const dry = JSON.parse((await ok(a, ['forget', '--dry-run', '--json'])).stdout) as ForgetJson
    expect(dry).toMatchObject({ dryRun: true, kept: 2, forgotten: 2, head: null, timeZone: expect.any(String) as unknown })
    // No time_zone: the system's, by its IANA name; a TZ that has none is said, not taken as UTC in silence.
    const tokyo = await a.run(['forget', '--dry-run'], { TZ: 'Asia/Tokyo' })
    expect(tokyo.stdout).toContain('(Asia/Tokyo)')
    expect(tokyo.stderr).not.toContain('no IANA name')
    const unnamed = await a.run(['forget', '--dry-run'], { TZ: 'JST-9' })
    expect(unnamed.stdout).toContain('(UTC)')
    expect(unnamed.stderr).toContain('the system\'s time zone (TZ="JST-9") has no IANA name, so the policy\'s hours and days are UTC\'s: set [retention] time_zone')
    expect(dry.publishes.filter(p => p.keep).map(p => p.cid)).toEqual(before.slice(0, 2).map(r => r.cid))
    expect(dry.publishes[0]?.reasons).toEqual(['newest', 'pointer', 'device', 'last'])
    expect(await history(a)).toEqual(before)

    const killed = await a.run(['forget'], { CIDSYNC_FAILPOINT: 'forget:relinked' })
    expect(killed.signal).toBe('SIGKILL')
    expect(await history(a)).toEqual(before)

    const text = await ok(a, ['forget'])
    expect(text.stdout).toContain('keep 2 publishes')
    expect(text.stdout).toContain('forgot 2 publishes')
    expect(text.stdout).toContain('the pointer moved to')
    const after = await history(a)
    expect(after.map(r => r.at)).toEqual(before.slice(0, 2).map(r => r.at))
    expect(after[1]?.previous).toBeNull()

    // Nothing left to forget; the files of both kept publishes still come back.
    expect(JSON.parse((await ok(a, ['forget', '--json'])).stdout)).toMatchObject({ forgotten: 0, head: null })
    const check = await ok(a, ['verify', '--full'])
    expect(check.stdout).toContain('restorable')
  }, 300_000)

  it('refuses a pointer set back behind this device\'s own publish, and moves nothing; once this device publishes on top, it forgets', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await cliDevice(root, service, 'a', 'deal = false\n[retention]\nkeep_last = 1\nprune_margin = "0s"\n')
    for (let hour = 1; hour <= 3; hour++) {
      await writeFile(join(a.folder, `h${hour}.md`), `hour ${hour}`)
      await ok(a, ['snapshot'])
    }
    const ours = (await history(a))[0]?.cid as string
    const before = (await history(a))[1]?.cid as string
    // The service is restored from a backup made before the last publish.
    servicePointer(join(root, 'service'), before)
    for (const args of [['forget'], ['forget', '--dry-run']]) {
      const refused = await a.run(args)
      expect(refused.code, refused.stderr).toBe(4)
      expect(refused.stderr).toContain('ERR_RETENTION_POINTER_SET_BACK')
      expect(refused.stderr).toContain(`lacks this device's own last publish ${ours}`)
      expect(refused.stderr).toContain('cidsync snapshot')
    }
    expect(servicePointer(join(root, 'service'))).toBe(before)

    // With nothing changed, a publish still goes on top of the pointer: then the forget runs.
    await ok(a, ['snapshot'])
    expect(JSON.parse((await ok(a, ['forget', '--json'])).stdout)).toMatchObject({ kept: 1 })
    const kept = await history(a)
    expect(kept).toHaveLength(1)
    expect(kept[0]?.entries).toBe(3)
  }, 300_000)
})

