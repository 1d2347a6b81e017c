import { describe, expect, it } from 'vitest'
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chmod, lstat, mkdir, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

async function device (dir: string): Promise<{ config: string, notes: string }> {
  const notes = join(dir, 'notes')
  await mkdir(notes, { recursive: true })
  const config = join(dir, 'a.toml')
  await writeFile(config, `state_dir = "state"\nnamespace = "swap"\n[[folders]]\nname = "notes"\npath = "${notes}"\nstore = true\n` +
    `[service]\ndir = "${join(dir, 'service')}"\n[snapshot]\ndeal = false\n[status]\nlisten = "127.0.0.1:0"\n`)
  return { config, notes }
}

/**
 * Everything under `root`: name, mode, size, mtime and, for files, a digest of the bytes. A
 * directory's mtime is left out: a temp made through the swapped link is removed again at once
 * (where it was made), but its making and removal move the directory's mtime.
 */
async function snapshotOf (root: string): Promise<string[]> {
  const out: string[] = []
  const walk = async (d: string, rel: string): Promise<void> => {
    const s = await lstat(d)
    out.push(`${rel}/ ${(s.mode & 0o7777).toString(8)}`)
    for (const name of (await readdir(d)).sort()) {
      const p = join(d, name)
      const e = await lstat(p)
      if (e.isDirectory()) await walk(p, `${rel}/${name}`)
      else out.push(`${rel}/${name} ${(e.mode & 0o7777).toString(8)} ${e.size} ${e.mtimeMs} ${(await readFile(p)).toString('base64').slice(0, 16)}`)
    }
  }
  await walk(root, '')
  return out
}

/**
 * The attacker: swaps each of `targets` for a symlink to `victim` and back, as fast as it can,
 * until `stop` exists (bounded to `ms`).
 */
const ATTACKER = `
const fs = require('node:fs')
const [victim, stop, ms, ...targets] = process.argv.slice(1)
const end = Date.now() + Number(ms)
let swaps = 0
while (Date.now() < end && !fs.existsSync(stop)) {
  for (const t of targets) {
    try { fs.renameSync(t, t + '.away') } catch { continue }
    try { fs.symlinkSync(victim, t) ; swaps++ } catch {}
    for (let i = 0; i < 200; i++) {}
    try { fs.unlinkSync(t) } catch {}
    try { fs.renameSync(t + '.away', t) } catch {}
  }
}
// Put back what is away.
for (const t of targets) { try { if (fs.lstatSync(t).isSymbolicLink()) fs.unlinkSync(t) } catch {} ; try { fs.renameSync(t + '.away', t) } catch {} }
console.log(String(swaps))
`

describe('restore --files with a directory swapped for a symlink while it runs (processes)', () => {
  it('writes nothing into, removes nothing from, and sets no mode or mtime on the directory the link leads to', async () => {
    const dir = await useTempDir()
    const { config, notes } = await device(dir)
    const files = new Map<string, Buffer>()
    for (let d = 0; d < 10; d++) {
      await mkdir(join(notes, `d${d}`, 'sub'), { recursive: true })
      for (let f = 0; f < 20; f++) files.set(`d${d}/sub/f${f}`, randomBytes(200 + f))
      files.set(`d${d}/sub/big`, randomBytes(2 * 1024 * 1024 + d))
    }
    for (const [path, bytes] of files) await writeFile(join(notes, path), bytes)
    for (let d = 0; d < 10; d++) { await chmod(join(notes, `d${d}`, 'sub'), 0o777); await chmod(join(notes, `d${d}`), 0o777) }
    expect((await runCli(['snapshot', '--config', config], { timeoutMs: 120_000 })).code).toBe(0)
    // The victim: a directory of the same shape, names a restore would write, a temp-looking name a sweep would remove.
    const victim = join(dir, 'victim')
    await mkdir(join(victim, 'sub'), { recursive: true })
    for (let f = 0; f < 20; f++) await writeFile(join(victim, `f${f}`), `victim ${f}`)
    for (let f = 0; f < 20; f++) await writeFile(join(victim, 'sub', `f${f}`), `victim sub ${f}`)
    await writeFile(join(victim, '.f0.cidsync-0123456789ab.part'), 'victim temp-looking file')
    await writeFile(join(victim, 'sub', '.f0.cidsync-0123456789ab.part'), 'victim temp-looking file')
    await chmod(join(victim, 'sub'), 0o700)
    await chmod(victim, 0o700)
    await utimes(victim, new Date('2001-01-01'), new Date('2001-01-01'))
    await utimes(join(victim, 'sub'), new Date('2001-01-01'), new Date('2001-01-01'))
    const before = await snapshotOf(victim)
    const to = join(dir, 'to')
    const results: string[] = []
    const problems: string[] = []
    for (let round = 0; round < 6; round++) {
      // Even rounds into a fresh --to (dirs made ahead), odd ones into the tree left (temps swept, dirs found).
      if (round % 2 === 0) await rm(to, { recursive: true, force: true })
      await mkdir(join(to, 'notes'), { recursive: true })
      for (let d = 0; d < 10; d++) await mkdir(join(to, 'notes', `d${d}`, 'sub'), { recursive: true })
      if (round % 2 === 1) for (let d = 0; d < 10; d++) await rm(join(to, 'notes', `d${d}`, 'sub', 'f3'), { force: true })
      const stop = join(dir, `stop-${round}`)
      const targets = Array.from({ length: 10 }, (_, d) => round < 3 ? join(to, 'notes', `d${d}`, 'sub') : join(to, 'notes', `d${d}`))
      const attacker = spawn(process.execPath, ['-e', ATTACKER, victim, stop, '60000', ...targets], { stdio: ['ignore', 'pipe', 'inherit'] })
      let swaps = ''
      attacker.stdout.on('data', (d: Buffer) => { swaps += d.toString() })
      const attackerDone = new Promise(resolve => attacker.on('close', resolve))
      const got = await runCli(['restore', '--files', 'notes/', '--to', to, '--config', config], { timeoutMs: 120_000 })
      await writeFile(stop, '')
      await attackerDone
      results.push(`round ${round}: exit ${got.code}, swaps ${swaps.trim()}, ${got.stdout.trim().split('\n').at(-1) ?? ''}`)
      expect(got.code === 0 || got.code === 1, got.stderr).toBe(true)
      const now = await snapshotOf(victim)
      const changed = [...now.filter(l => !before.includes(l)).map(l => `+ ${l}`), ...before.filter(l => !now.includes(l)).map(l => `- ${l}`)]
      if (changed.length > 0) problems.push(`round ${round} (${round < 3 ? 'sub swapped' : 'parent swapped'}, ${round % 2 === 0 ? 'fresh' : 'existing'}): the victim changed:\n  ${changed.join('\n  ')}`)
      // Every file in the tree is whole; every directory ends recorded or left as it was.
      for (const [path, bytes] of files) {
        const there = await readFile(join(to, 'notes', path)).catch(() => undefined)
        if (there !== undefined) expect(there.equals(bytes), path).toBe(true)
      }
      expect((await stat(victim)).mode & 0o777).toBe(0o700)
    }
    expect(problems.join('\n'), results.join('\n')).toBe('')
  }, 600_000)
})
