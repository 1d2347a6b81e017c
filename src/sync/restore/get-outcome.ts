import { join } from 'node:path'
import type { Config } from '../../config/index.js'
import type { Entry } from '../../index/index.js'
import { targetRoot } from './targets.js'

/** What became of one entry of a `get` or `restore --files`. */
export interface GetOutcome {
  /** `folder/path`, as `ls` prints it. */
  readonly path: string
  readonly outcome: 'written' | 'already-there' | 'kept-different' | 'not-stored' | 'failed'
  /** What the entry is: a file (absent), a symlink or a directory. */
  readonly kind?: 'symlink' | 'dir'
  readonly target?: string
  readonly reason?: string
  readonly code?: string
}

/**
 * A file written or found right: its path and target made from its row when asked. A restore of
 * many files holds one a file to the end; a string or two each would grow with the tree.
 */
export class PlacedFile implements GetOutcome {
  constructor (private readonly row: Entry, readonly outcome: 'written' | 'already-there', private readonly placing: { readonly config: Config, readonly to: string | undefined }) {}

  get path (): string {
    return `${this.row.folder}/${this.row.path}`
  }

  get target (): string {
    const { root, components } = targetRoot(this.placing.config, this.placing.to, this.row)
    return join(root, ...components)
  }
}
