/** What a change note is handed to: the sync runner (which schedules storing and a publish from it). */
export interface ChangeTarget {
  noteChange (): void
}

/**
 * The change note from the index to the publish scheduler, with one owner: every commit that
 * changed rows is noted here ({@link note}), whether or not a sync runner exists yet.
 *
 * - While there is none (the index being scanned, the service being reached, sync.sqlite being
 *   checked), the notes are held, never dropped.
 * - {@link attach} hands the runner what was held, as one note, or a note anyway when the index
 *   changed since the last publish (changes made while the daemon was down); with neither, it
 *   notes nothing, so a plain restart does not show "changes waiting".
 * - From then on each note goes straight to the runner, until {@link detach} (the daemon stopping).
 */
export class ChangeNotes {
  private target: ChangeTarget | undefined
  private held = 0

  /** Rows held for a runner not attached yet. */
  get waiting (): number {
    return this.held
  }

  /** A commit changed `rows` rows. */
  note (rows: number): void {
    if (rows <= 0) return
    if (this.target === undefined) this.held += rows
    else this.target.noteChange()
  }

  /** The runner exists: what was held is noted to it once, as is a change since the last publish. */
  attach (target: ChangeTarget, changedSincePublish: boolean): void {
    this.target = target
    const held = this.held
    this.held = 0
    if (held > 0 || changedSincePublish) target.noteChange()
  }

  /** No runner any more: notes are held again (and go nowhere if none is attached again). */
  detach (): void {
    this.target = undefined
  }
}
