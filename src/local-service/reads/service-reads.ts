import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { openServiceDatabase, SERVICE_DATABASE } from '../store.js'
import { accountReads, type AccountReads } from './account-reads.js'

/** A service directory's database read in this process, the service not started: its owner closes it. */
export interface ServiceReads extends AccountReads {
  close: () => void
}

/**
 * Opens the database of the service in `dir` as the service opens it (the same checks of a
 * damaged or newer one), for reads alone. Undefined when the directory holds no service yet: only
 * a started service makes one.
 */
export async function openServiceReads (dir: string): Promise<ServiceReads | undefined> {
  if (!existsSync(join(dir, SERVICE_DATABASE))) return undefined
  const db = await openServiceDatabase(dir)
  try {
    return { ...accountReads(db), close: () => { db.close() } }
  } catch (err) {
    db.close()
    throw err
  }
}
