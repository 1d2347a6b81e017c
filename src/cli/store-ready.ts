import { safeText } from './safe-text.js'

/**
 * Makes (or opens) the directory store at `dir`, as `login --mirror` and `export --dir` do, and
 * warns on stderr when others may write where it is. Answers those places.
 */
export async function directoryStoreReady (dir: string, create: true | 'empty'): Promise<string[]> {
  const { DirectoryObjectStore, openToOthers } = await import('../store/index.js')
  await DirectoryObjectStore.open(dir, { create })
  const open = openToOthers(dir)
  if (open.length > 0) {
    process.stderr.write(`cidsync: warning: others can write to ${open.map(safeText).join(', ')}: they could replace, remove or set back what is copied there. ` +
      'A restore checks every byte, so nothing forged is restored; but a copy may be lost. Keep the store where only you write (`chmod o-w`, or the mount\'s umask)\n')
  }
  return open
}
