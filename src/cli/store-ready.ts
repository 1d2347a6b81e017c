import { safeText } from './safe-text.js'

/**
 * Makes (or opens) the directory store at `dir`, as `login --mirror` and `export --dir` do, and
 * warns on stderr when others may write where it is. Answers those places.
 */
export async function directoryStoreReady (dir: string, create: true | 'empty'): Promise<string[]> {
  const { directoryBackend, pathMirror } = await import('../store/index.js')
  return await storeReady(dir, async () => await directoryBackend.prepare?.(pathMirror(dir), create) ?? { openToOthers: [] })
}

/**
 * Makes (or opens) a store with its backend's `prepare`, and warns on stderr when others may
 * write where it is (`where`, for the message). Answers those places.
 */
export async function storeReady (where: string, prepare: () => Promise<{ readonly openToOthers: readonly string[] }>): Promise<string[]> {
  const open = [...(await prepare()).openToOthers]
  if (open.length > 0) {
    process.stderr.write(`cidsync: warning: others can write to ${open.map(safeText).join(', ')}: they could replace, remove or set back what is copied there. ` +
      'A restore checks every byte, so nothing forged is restored; but a copy may be lost. Keep the store where only you write (`chmod o-w`, or the mount\'s umask)\n')
  }
  return open
}
