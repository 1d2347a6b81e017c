import { CidsyncError, DirectoryStoreError } from '../errors.js'
import type { Backend } from './backends.js'
import { DirectoryObjectStore } from './directory-store.js'
import { directoryHome } from './directory-pointers.js'
import { openToOthers } from './directory-writers.js'

/**
 * A plain directory (a USB disk, a NAS mount): objects and pointer as files, named by a
 * `[[mirrors]]` table's `path`. No names, no deals. Its store is made only by `prepare` (`login
 * --mirror`), so a disk that is not mounted is never filled in its place.
 */
export const directoryBackend: Backend = {
  kind: 'directory',
  noun: 'directory',
  location: { path: true },
  offers: { names: false, deals: false },
  failed: (err) => err instanceof DirectoryStoreError,
  advice: (err, name) => err instanceof CidsyncError && err.code === 'ERR_DIRECTORY_STORE'
    ? `the mirror's directory is not there, not a store, or holds what cidsync never writes: mount its disk, or move aside what the message names; copying resumes by itself, nothing lost meanwhile. Only for a new disk, \`cidsync login --mirror ${name}\` makes its store`
    : undefined,
  open: ({ mirror, create }) => {
    const home = directoryHome(mirror.path, { create })
    return { home, ready: async () => { await home.objects.opened() }, close: async () => { await home.objects.close() } }
  },
  prepare: async (mirror, create) => {
    await DirectoryObjectStore.open(mirror.path, { create })
    return { openToOthers: openToOthers(mirror.path) }
  }
}
