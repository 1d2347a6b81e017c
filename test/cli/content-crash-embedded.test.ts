import { describe, expect, it } from 'vitest'
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { KillDelay, runAndKill, SMALL_LAYOUT, tree, writeSomeFiles, type ContentDevice } from './content-devices.js'

const KILLS = 12
/** Kills are cut short of a run this often at most: a bound, not a wait. */
const MAX_RUNS = 60

/** A device on an embedded service dir, as the quick start makes one: its restores read the store in-process and stream large files. */
async function embeddedDevice (root: string, name: string, service: string): Promise<ContentDevice> {
  const folder = join(root, name, 'notes')
  await mkdir(folder, { recursive: true })
  const config = join(root, `${name}.toml`)
  await writeFile(config, `state_dir = "${name}/state"\nnamespace = "content-embedded"\n[[folders]]\nname = "notes"\npath = "${name}/notes"\nstore = true\n` +
    `[status]\nlisten = "127.0.0.1:0"\n[service]\ndir = "${service}"\n[snapshot]\ndeal = false\n`)
  const env = { ...process.env, ...SMALL_LAYOUT }
  return {
    name, config, state: join(root, name, 'state'), folder, env,
    run: async (args, extra = {}) => await runCli([...args, '--config', config], { env: { ...env, ...extra }, timeoutMs: 120_000 })
  }
}

async function ok (d: ContentDevice, args: string[]): Promise<string> {
  const result = await d.run(args)
  expect(result.code, `${d.name}: ${args.join(' ')}: ${result.stderr}`).toBe(0)
  return result.stdout
}

describe('restore --files from the embedded service, killed with SIGKILL at random moments (processes)', () => {
  it(`resumes each of ${KILLS} kills: every byte right, no half-written file, nothing left behind`, async () => {
    const root = await useTempDir()
    const service = join(root, 'service')
    const a = await embeddedDevice(root, 'a', service)
    const b = await embeddedDevice(root, 'b', service)
    // Large files in parts of 2 MiB (SMALL_LAYOUT), streamed from the store block by block.
    for (let i = 0; i < 3; i++) await writeSomeFiles(a.folder, `dir-${i}`, { largeBytes: 5 * 1024 * 1024 + i, small: 30 })
    await ok(a, ['snapshot'])
    const key = (await ok(a, ['key', 'export'])).trim()
    await ok(b, ['key', 'import', key])
    await ok(b, ['restore'])
    const want = await tree(a.folder)
    const to = join(root, 'back')
    let kills = 0
    const delay = new KillDelay(2_000, 50)
    for (let run = 0; kills < KILLS; run++) {
      expect(run, 'runs without reaching the kills').toBeLessThan(MAX_RUNS)
      const ended = await runAndKill(b, ['restore', '--files', '--to', to], () => true, delay.next())
      delay.ended(ended.killed)
      if (ended.killed) {
        kills++
        // Whatever is there under its real name is whole.
        const got = await tree(join(to, 'notes')).catch(() => new Map<string, string>())
        for (const [path, sha] of got) if (!path.split('/').some(p => p.startsWith('.'))) expect(sha, path).toBe(want.get(path))
        continue
      }
      expect(ended.code, ended.stderr).toBe(0)
      // All back: start again into an empty dir, so every kill lands mid-restore.
      await rm(to, { recursive: true, force: true })
    }
    const last = await ok(b, ['restore', '--files', '--to', to])
    expect(last).toContain('files written')
    expect(await tree(join(to, 'notes')), 'every file, and nothing else (no temp file of a killed run)').toEqual(want)
  }, 900_000)
})

describe('a snapshot storing through the embedded service (uploads added in process), killed with SIGKILL at random moments (processes)', () => {
  it(`resumes each of ${KILLS} kills: every byte comes back on a second device, no spool file left behind`, async () => {
    const root = await useTempDir()
    const service = join(root, 'service')
    const a = await embeddedDevice(root, 'a', service)
    const b = await embeddedDevice(root, 'b', service)
    const spool = join(a.state, 'content-spool')
    const spooled = (): boolean => { try { return readdirSync(spool).length > 0 } catch { return false } }
    let round = 0
    await writeSomeFiles(a.folder, `round-${round}`, { largeBytes: 9 * 1024 * 1024 + 123, small: 90 })
    let kills = 0
    const delay = new KillDelay(800)
    for (let run = 0; kills < KILLS; run++) {
      expect(run, 'runs without reaching the kills').toBeLessThan(MAX_RUNS)
      // Once a part or pack is on its way to the service, a random moment later: mid-add, mid-fsync, between, or in the publish.
      const ended = await runAndKill(a, ['snapshot'], spooled, delay.next())
      delay.ended(ended.killed)
      if (ended.killed) { kills++; continue }
      expect(ended.code, ended.stderr).toBe(0)
      await writeSomeFiles(a.folder, `round-${++round}`, { largeBytes: 5 * 1024 * 1024 + round, small: 60 })
    }
    const last = await a.run(['snapshot'])
    expect(last.code, last.stderr).toBe(0)
    expect(last.stderr).not.toContain('not stored')
    expect((await readdir(spool)).map(String), 'part and pack files of killed runs').toEqual([])

    const key = (await ok(a, ['key', 'export'])).trim()
    await ok(b, ['key', 'import', key])
    await ok(b, ['restore'])
    const to = join(root, 'back')
    expect(await ok(b, ['restore', '--files', '--to', to])).toContain('written, 0 already right')
    expect(await tree(join(to, 'notes'))).toEqual(await tree(a.folder))
  }, 900_000)
})
