import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { expect } from 'vitest'
import { runCli } from './cli.js'

/** A device `name` under `root` with one folder, `notes`, on the embedded service in `root/service` (shared by every device made so). */
export async function embeddedDeviceConfig (root: string, name: string): Promise<string> {
  await mkdir(join(root, name, 'notes'), { recursive: true })
  const path = join(root, `${name}.toml`)
  await writeFile(path, `state_dir = "${name}/state"\n[[folders]]\nname = "notes"\npath = "${name}/notes"\n[service]\ndir = "${join(root, 'service')}"\n[status]\nlisten = "127.0.0.1:0"\n`)
  return path
}

/**
 * Device a publishes `notes/plan.md` twice, then the service (as a lying one would) serves the
 * first publish as the pointer again. Answers the first publish's CID and a time between the two.
 */
export async function publishTwiceThenRollBack (root: string, config: string): Promise<{ first: string, between: string }> {
  const pointerOf = (): string => {
    const db = new Database(join(root, 'service', 'service.sqlite'), { readonly: true })
    try { return db.prepare('SELECT snapshot_cid FROM pointers').pluck().get() as string } finally { db.close() }
  }
  await writeFile(join(root, 'a', 'notes', 'plan.md'), 'one')
  expect((await runCli(['snapshot', '--config', config], { timeoutMs: 60_000 })).code).toBe(0)
  const first = pointerOf()
  const between = new Date().toISOString()
  await writeFile(join(root, 'a', 'notes', 'plan.md'), 'two, longer')
  expect((await runCli(['snapshot', '--config', config], { timeoutMs: 60_000 })).code).toBe(0)
  expect(pointerOf()).not.toBe(first)
  const db = new Database(join(root, 'service', 'service.sqlite'))
  try { db.prepare('UPDATE pointers SET snapshot_cid = ?').run(first) } finally { db.close() }
  return { first, between }
}
