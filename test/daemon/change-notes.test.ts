import { describe, expect, it } from 'vitest'
import { ChangeNotes } from '../../src/daemon/change-notes.js'

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
