import { describe, expect, it } from 'vitest'
import { rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { ChangeNotes } from '../../src/daemon/change-notes.js'
import { startInProcessDaemon } from '../helpers/in-process-daemon.js'
import { httpGet } from '../helpers/http.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'

/** A runner's side of the contract: how many notes reached it. */
function target (): { noteChange: () => void, notes: number } {
  const t = { notes: 0, noteChange: () => { t.notes++ } }
  return t
}

describe('the change note from the index to the publish scheduler', () => {
  it('holds the commits made before there is a runner and hands them over once, when it is attached', () => {
    const changes = new ChangeNotes()
    changes.note(3)
    changes.note(2)
    expect(changes.waiting).toBe(5)
    const runner = target()
    changes.attach(runner, false)
    expect(runner.notes).toBe(1)
    expect(changes.waiting).toBe(0)
  })

  it('notes at attach a change made while the daemon was down (the index moved since the last publish), and nothing on a plain restart', () => {
    const down = new ChangeNotes()
    const first = target()
    down.attach(first, true)
    expect(first.notes).toBe(1)
    const plain = new ChangeNotes()
    const second = target()
    plain.attach(second, false)
    expect(second.notes).toBe(0)
  })

  it('passes each commit straight on once attached, ignores commits that changed nothing, and holds again once detached', () => {
    const changes = new ChangeNotes()
    const runner = target()
    changes.attach(runner, false)
    changes.note(1)
    changes.note(0)
    changes.note(4)
    expect(runner.notes).toBe(2)
    changes.detach()
    changes.note(1)
    expect(runner.notes).toBe(2)
    expect(changes.waiting).toBe(1)
  })
})

describe('the change note in the daemon', () => {
  it('a file indexed while the service cannot be reached is published once it can be', async () => {
    const dir = await useTempDir()
    const blocker = join(dir, 'not-a-dir')
    await writeFile(blocker, 'a file where the service dir should be')
    const { daemon, port, token, notes } = await startInProcessDaemon(dir, {
      service: { dir: join(blocker, 'service') },
      snapshot: { quiet_seconds: 0, min_interval_seconds: 0, deal: false }
    })
    await until(() => daemon.status().service.error !== null ? true : undefined, 10_000, 'the service error')
    // Committed while there is no sync runner: the note is held for it.
    await writeFile(join(notes, 'while-away.md'), 'indexed while the service is away')
    await until(() => daemon.status().index.files === 1 ? true : undefined, 10_000, 'the file to be indexed')
    expect(daemon.status().publish).toBeNull()
    // The service can be reached again; a request makes the next attempt now rather than after its wait.
    await rm(blocker)
    expect((await httpGet({ port }, '/snapshot', { method: 'POST', headers: { authorization: `Bearer ${token}` } })).status).toBe(503)
    const published = await until(() => daemon.status().publish?.last ?? undefined, 30_000, 'the held change to be published')
    expect(published.entries).toBe(1)
  })
})
