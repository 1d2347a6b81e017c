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
