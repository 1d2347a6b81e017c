import { open } from 'node:fs/promises'

/** fsyncs a file or a directory (a rename is durable once its directory is synced). */
export async function fsyncPath (path: string): Promise<void> {
  const handle = await open(path, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}
