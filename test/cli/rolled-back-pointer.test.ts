import { describe, expect, it } from 'vitest'
import { existsSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { EXTERNAL } from '../helpers/service.js'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

async function deviceConfig (root: string, name: string): Promise<string> {
  await mkdir(join(root, name, 'notes'), { recursive: true })
  const path = join(root, `${name}.toml`)
  await writeFile(path, `state_dir = "${name}/state"\n[[folders]]\nname = "notes"\npath = "${name}/notes"\n[service]\ndir = "${join(root, 'service')}"\n[status]\nlisten = "127.0.0.1:0"\n`)
  return path
}

describe.skipIf(EXTERNAL)('a pointer set back behind this device\'s own publish', () => {
  it('export (at the pointer or --at) and restore --at refuse it (exit 4, ERR_POINTER_ROLLED_BACK, no FILE), as get --at and find --at do; a time before it still answers', async () => {
    const root = await useTempDir()
    const a = await deviceConfig(root, 'a')
    const pointerOf = (): string => {
      const db = new Database(join(root, 'service', 'service.sqlite'), { readonly: true })
      try { return db.prepare('SELECT snapshot_cid FROM pointers').pluck().get() as string } finally { db.close() }
    }
    await writeFile(join(root, 'a', 'notes', 'plan.md'), 'one')
    expect((await runCli(['snapshot', '--config', a], { timeoutMs: 60_000 })).code).toBe(0)
    const first = pointerOf()
    const between = new Date().toISOString()
    await writeFile(join(root, 'a', 'notes', 'plan.md'), 'two, longer')
    expect((await runCli(['snapshot', '--config', a], { timeoutMs: 60_000 })).code).toBe(0)
    expect(pointerOf()).not.toBe(first)
    // The lying service serves the first publish as the pointer again.
    const db = new Database(join(root, 'service', 'service.sqlite'))
    try { db.prepare('UPDATE pointers SET snapshot_cid = ?').run(first) } finally { db.close() }

    const now = new Date().toISOString()
    const runs: Array<[string[], string | undefined]> = [
      [['export', '--car', join(root, 'latest.car')], join(root, 'latest.car')],
      [['export', '--car', join(root, 'at.car'), '--at', now], join(root, 'at.car')],
      [['restore', '--at', now, '--dry-run'], undefined]
    ]
    for (const [args, file] of runs) {
      const refused = await runCli([...args, '--config', a], { timeoutMs: 60_000 })
      expect(refused.code, `${args.join(' ')}: ${refused.stderr}`).toBe(4)
      expect(refused.stderr).toContain('ERR_POINTER_ROLLED_BACK')
      if (file !== undefined) expect(existsSync(file), `${file} after a refused export`).toBe(false)
    }
    const before = await runCli(['export', '--car', join(root, 'before.car'), '--at', between, '--config', a], { timeoutMs: 60_000 })
    expect(before.code, before.stderr).toBe(0)
    expect(before.stdout).toContain(`exported ${first}`)
    const restoreBefore = await runCli(['restore', '--at', between, '--dry-run', '--config', a], { timeoutMs: 60_000 })
    expect(restoreBefore.code, restoreBefore.stderr).toBe(0)
    expect(restoreBefore.stdout).toContain(`would install ${first}`)
  }, 240_000)
})
