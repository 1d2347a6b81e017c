import { describe, expect, it } from 'vitest'
import { appendFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { runCli } from '../helpers/cli.js'
import { httpGet } from '../helpers/http.js'
import { startInProcessDaemon, untilReached } from '../helpers/in-process-daemon.js'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { cliDevice, ok, type HistoryRow } from './v2-cli.js'

type Row = HistoryRow & { marks?: string[] }

describe.skipIf(EXTERNAL)('cidsync snapshot --keep', () => {
  it('labels a publish made even when nothing changed; history shows it; forget keeps it; bad labels are refused', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await cliDevice(root, service, 'a')
    const at = (hour: number): NodeJS.ProcessEnv => ({ CIDSYNC_TEST_CLOCK: `2026-03-01T0${hour}:00:00.000Z` })
    const snapshot = async (args: string[], hour: number): Promise<string> => {
      const run = await a.run(['snapshot', ...args], at(hour))
      expect(run.code, run.stderr).toBe(0)
      return run.stdout
    }
    await writeFile(join(a.folder, 'one.md'), 'one')
    await snapshot([], 1)

    // Refused at the edge, before anything is published: exit 2, the rule said.
    for (const bad of ['', ' padded', 'evil\u202etxt', 'bell\u0007', 'x'.repeat(201)]) {
      const refused = await a.run(['snapshot', '--keep', bad])
      expect(refused.code, bad).toBe(2)
      expect(refused.stderr).toContain('--keep: label')
      expect(refused.stderr).not.toContain('\u202e')
    }
    const twice = await a.run(['snapshot', '--keep', 'same', '--keep', 'same'])
    expect(twice.code).toBe(2)
    expect(twice.stderr).toContain('a label twice')

    expect(await snapshot(['--keep', 'before the move'], 2)).toMatch(/^bafk\S+ {2}1 entry, kept as "before the move"\n$/)
    await writeFile(join(a.folder, 'three.md'), 'three')
    await snapshot([], 3)
    await writeFile(join(a.folder, 'four.md'), 'four')
    await snapshot([], 4)
    const rows = JSON.parse((await ok(a, ['history', '--json'])).stdout) as Row[]
    expect(rows.map(r => r.marks ?? [])).toEqual([[], [], ['before the move'], []])
    const table = (await ok(a, ['history'])).stdout
    expect(table).toContain('KEPT AS')
    expect(table).toContain('"before the move"')

    await appendFile(a.config, '[retention]\nkeep_last = 1\nprune_margin = "0s"\n')
    const typo = await a.run(['forget', '--unmark', 'before the mvoe'])
    expect(typo.code).toBe(3)
    expect(typo.stderr).toContain('no publish in the history carries the label "before the mvoe"')
    const forgot = await ok(a, ['forget'])
    expect(forgot.stdout).toContain('marked "before the move"')
    expect(forgot.stdout).toContain('forgot 2 publishes')
    const after = JSON.parse((await ok(a, ['history', '--json'])).stdout) as Row[]
    expect(after.map(r => r.marks ?? [])).toEqual([[], ['before the move']])
    // The hour-3 publish is gone: --at names both kept publishes around it.
    const near = await ok(a, ['restore', '--at', '2026-03-01T03:30:00Z', '--dry-run'])
    // Each publish's time as history gives it: a run starts at the injected clock, and its publish may come a millisecond on.
    expect(near.stdout).toContain(`--at 2026-03-01T03:30:00Z: the nearest publish before it is of ${after[1]?.at ?? '?'}; the next is of ${after[0]?.at ?? '?'} (\`--cid ${after[0]?.cid ?? '?'}\`). A \`cidsync forget\` may have removed the publishes between them`)
    expect(after[1]?.at).toMatch(/^2026-03-01T02:00:00\.\d{3}Z$/)
    expect(near.stdout).toContain(`would install ${after[1]?.cid ?? '?'}`)
    expect((await ok(a, ['verify', '--full'])).stdout).toContain('restorable')
  }, 300_000)

  it('through the daemon: labels with the token; without it the route refuses', async () => {
    const dir = await useTempDir()
    const { port, config } = await startInProcessDaemon(dir)
    await untilReached(port)
    const snap = await runCli(['snapshot', '--config', config, '--keep', 'from the cli', '--json'], { timeoutMs: 120_000 })
    expect(snap.code, snap.stderr).toBe(0)
    expect(JSON.parse(snap.stdout)).toMatchObject({ skipped: false, marks: ['from the cli'] })
    const bare = await httpGet({ port }, `/snapshot?keep=${encodeURIComponent('no token')}`, { method: 'POST' })
    // No token, no session: nothing is published, labelled or not.
    expect(bare.status).toBe(401)
    const history = await runCli(['history', '--config', config, '--json'], { timeoutMs: 60_000 })
    expect((JSON.parse(history.stdout) as Row[])[0]?.marks).toEqual(['from the cli'])
  }, 180_000)
})
