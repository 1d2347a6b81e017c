import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, contentObjects, ok } from './content-devices.js'
import { embeddedDevice, packBytes } from './retention-devices.js'

interface PruneJson { dryRun: boolean, deleted: { content: number, segment: number, manifest: number }, bytes: number, young: number, chainsHeld: number }

const RETENTION = '[retention]\nkeep_last = 1\nprune_margin = "0s"\n'

describe.skipIf(EXTERNAL)('cidsync prune', () => {
  it('deletes an old version\'s content once forgotten; killed mid-way, a rerun finishes; the kept version comes back whole', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await contentDevice(root, service, 'a', 'compact_after_deltas = 1\n' + RETENTION)
    const first = randomBytes(3 * 1024 * 1024 + 7)
    await writeFile(join(a.folder, 'big.bin'), first)
    await writeFile(join(a.folder, 'keep.txt'), 'the same in both')
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T01:00:00.000Z' })
    const v1 = contentObjects(a)
    const second = randomBytes(3 * 1024 * 1024 + 9)
    await writeFile(join(a.folder, 'big.bin'), second)
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T02:00:00.000Z' })
    const v2 = [...contentObjects(a)].filter(o => !v1.has(o))
    expect(v2.length).toBeGreaterThan(0)

    // Nothing forgotten yet: the old version is still named by a kept publish.
    expect((JSON.parse((await ok(a, ['prune', '--dry-run', '--json'])).stdout) as PruneJson).deleted.content).toBe(0)
    await ok(a, ['forget'])
    // A forgotten time before the kept one is refused, naming the oldest kept publish.
    const forgotten = await a.run(['get', 'notes/big.bin', '--to', join(root, 'early'), '--at', '2026-03-01T01:30:00Z'])
    expect(forgotten.code).toBe(3)
    expect(forgotten.stderr).toContain('its oldest publish is of 2026-03-01T02:00:00.000Z (a `cidsync forget` may have removed older ones)')
    const dry = JSON.parse((await ok(a, ['prune', '--dry-run', '--json'])).stdout) as PruneJson
    expect(dry.deleted.content).toBeGreaterThan(0)
    expect(dry.bytes).toBeGreaterThan(3 * 1024 * 1024)

    const killed = await a.run(['prune'], { CIDSYNC_FAILPOINT: 'prune:batch' })
    expect(killed.signal).toBe('SIGKILL')
    const rest = JSON.parse((await ok(a, ['prune', '--json'])).stdout) as PruneJson
    // The killed run deleted its first batch; the rerun deletes what was left of the same plan.
    expect(rest.deleted.content + rest.deleted.segment + rest.deleted.manifest).toBeLessThanOrEqual(dry.deleted.content + dry.deleted.segment + dry.deleted.manifest)
    // Of the first publish's objects only keep.txt's pack is left; every object of the new version is.
    const left = await Promise.all([...v1].map(async o => await service.clients.objects.has(o)))
    expect(left.filter(Boolean)).toHaveLength(1)
    for (const object of v2) expect(await service.clients.objects.has(object)).toBe(true)
    expect(JSON.parse((await ok(a, ['prune', '--json'])).stdout)).toMatchObject({ deleted: { content: 0, segment: 0, manifest: 0 } })

    // An export with content leaves out the pruned version, and says so.
    const exported = await ok(a, ['export', '--car', join(root, 'all.car'), '--content'])
    expect(exported.stdout + exported.stderr).toMatch(/\d+ objects? of forgotten versions (?:was|were) pruned: not exported/)

    // The kept publish's files come back, byte for byte, and the drill passes.
    await ok(a, ['get', 'notes/big.bin', '--to', join(root, 'back')])
    expect((await readFile(join(root, 'back', 'notes', 'big.bin'))).equals(second)).toBe(true)
    expect((await ok(a, ['verify', '--full'])).stdout).toContain('restorable')
  }, 600_000)

  it('says how long prune_margin holds back what a forget just left, in the config\'s units', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await contentDevice(root, service, 'a', '[retention]\nkeep_last = 1\nprune_margin = "36h"\n')
    for (let hour = 1; hour <= 2; hour++) {
      await writeFile(join(a.folder, 'note.txt'), `hour ${hour}`)
      await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: `2026-03-01T0${hour}:00:00.000Z` })
    }
    await ok(a, ['forget'])
    const dry = await ok(a, ['prune', '--dry-run'])
    expect(dry.stdout).toContain('would keep 1 replaced chain whole: forgotten within prune_margin (36h); a prune once it has passed deletes them\n')
    const done = await ok(a, ['prune'])
    expect(done.stdout).toContain('kept 1 replaced chain whole: forgotten within prune_margin (36h)')
  }, 300_000)

  it('with prune_margin raised after a prune that had none, goes on: what that prune deleted of a replaced chain holds nothing', async () => {
    const root = await useTempDir()
    const a = await embeddedDevice(root, 'a', join(root, 'service'), 'compact_after_deltas = 1\n[retention]\nkeep_last = 2\nprune_margin = "0s"\n')
    for (let hour = 1; hour <= 4; hour++) {
      await writeFile(join(a.folder, `note-${hour}.txt`), `hour ${hour}`)
      await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: `2026-03-01T0${hour}:00:00.000Z` })
    }
    const oldest = (JSON.parse((await ok(a, ['history', '--json'])).stdout) as Array<{ cid: string }>).at(-1)?.cid as string
    await ok(a, ['forget', '--prune'])
    // A forgotten publish whose objects went: not found (exit 3), and what to do, not damage.
    const gone = await a.run(['restore', '--cid', oldest, '--force'])
    expect(gone.code, gone.stderr).toBe(3)
    expect(gone.stderr).toContain('ERR_CONTENT_NOT_FOUND')
    expect(gone.stderr).toContain('a forget took it out of the history and a prune deleted them')
    // On a device that never read its manifest: the manifest itself is gone, said the same way.
    const b = await embeddedDevice(root, 'b', join(root, 'service'), '')
    await ok(b, ['key', 'import', (await ok(a, ['key', 'export'])).stdout.trim()])
    const unknown = await b.run(['restore', '--cid', oldest])
    expect(unknown.code, unknown.stderr).toBe(3)
    expect(unknown.stderr).toContain(`no publish ${oldest} to restore: the service does not hold it`)
    expect(unknown.stderr).toContain('A forget may have taken it out of the history and a prune deleted it')
    // The chain the forget replaced is younger than the new margin: held whole, as far as it is left.
    await writeFile(a.config, (await readFile(a.config, 'utf8')).replace('prune_margin = "0s"', 'prune_margin = "1d"'))
    const dry = await a.run(['prune', '--dry-run'])
    expect(dry.code, dry.stderr).toBe(0)
    expect(dry.stdout).toContain('would keep 1 replaced chain whole')
    expect(dry.stdout).toMatch(/\nthe account holds \d+ objects \(/)
    expect((await a.run(['prune'])).code).toBe(0)
    expect((await ok(a, ['verify', '--full'])).stdout).toContain('restorable')
  }, 300_000)

  it('on the embedded service, the disk space comes back; forget --prune does both in one run', async () => {
    const root = await useTempDir()
    const a = await embeddedDevice(root, 'a', join(root, 'service'), `compact_after_deltas = 1\n${RETENTION}`)
    await writeFile(join(a.folder, 'big.bin'), randomBytes(4 * 1024 * 1024))
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T01:00:00.000Z' })
    await writeFile(join(a.folder, 'big.bin'), randomBytes(1024))
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T02:00:00.000Z' })
    const before = await packBytes(join(root, 'service'))
    // A dry run of both would count the prune from the history before the forget: refused.
    const dryBoth = await a.run(['forget', '--prune', '--dry-run'])
    expect(dryBoth.code).toBe(2)
    expect(dryBoth.stderr).toContain('--prune with --dry-run')
    const pruned = await ok(a, ['forget', '--prune'])
    expect(pruned.stdout).toContain('forgot 1 publish')
    expect(pruned.stdout).not.toContain('stay until a prune')
    expect(pruned.stdout).toMatch(/\ndeleted \d+ objects \(\d+ content/)
    expect(pruned.stdout).toMatch(/\nthe account holds \d+ objects \(.*\) after the deletes\n/)
    expect(pruned.stdout).toMatch(/the embedded service gave back \d/)
    // No [[mirrors]]: nothing is said of mirrors.
    expect(pruned.stdout).toContain('storage deals already made are not cancelled\n')
    expect(pruned.stdout).not.toMatch(/mirror/)
    expect(await packBytes(join(root, 'service'))).toBeLessThan(before - 3 * 1024 * 1024)
    expect((await ok(a, ['verify', '--full'])).stdout).toContain('restorable')

    // In JSON, the prune's own object under `prune`.
    await writeFile(join(a.folder, 'big.bin'), randomBytes(2048))
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T03:00:00.000Z' })
    const both = JSON.parse((await ok(a, ['forget', '--prune', '--json'])).stdout) as { forgotten: number, prune: PruneJson & { reclaimed: unknown } }
    expect(both.forgotten).toBe(1)
    expect(both.prune).toMatchObject({ dryRun: false, young: 0 })
    expect(both.prune.deleted.manifest).toBeGreaterThan(0)
    expect(both.prune.reclaimed).not.toBeNull()
  }, 600_000)
})
