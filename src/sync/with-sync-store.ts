import { SyncStore } from './sync-store.js'

/** Runs `use` with the store given, or with one opened for this call and closed after (one-off library use, tests). */
export async function withSyncStore<T> (given: SyncStore | undefined, stateDir: string, use: (store: SyncStore) => Promise<T>): Promise<T> {
  if (given !== undefined) return await use(given)
  const store = new SyncStore(stateDir)
  try {
    return await use(store)
  } finally {
    store.close()
  }
}
