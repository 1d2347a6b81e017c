import { SyncStore } from './store.js'
import { hasSyncState } from './state-file.js'

/**
 * The one holder of a process's sync store where it may not exist yet: the owner (a command, a
 * test) makes this once, hands it on, and closes it at the end; what it is handed to never opens
 * nor closes sync.sqlite. A state dir that never synced gets the file only when `store` is first
 * asked for (a restore once installed): a dry run or a failed restore leaves none behind.
 */
export class SyncStoreOwner {
  private opened: SyncStore | undefined

  constructor (private readonly stateDir: string) {}

  /** The store, opened (and its file made) on first use. */
  get store (): SyncStore {
    this.opened ??= new SyncStore(this.stateDir)
    return this.opened
  }

  /** The store if this state dir has one already, else undefined (nothing made). */
  get existing (): SyncStore | undefined {
    return this.opened ?? (hasSyncState(this.stateDir) ? this.store : undefined)
  }

  close (): void {
    this.opened?.close()
    this.opened = undefined
  }
}
