import { readlinkSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { onTestFinished, vi } from 'vitest'

/** Whether this system names a descriptor's file (`/proc/self/fd`): what the probe needs. */
export function canNameDescriptors (): boolean {
  try {
    readlinkSync('/proc/self/fd/0')
    return true
  } catch {
    return false
  }
}

/**
 * Records the path of every file and directory synced through a `FileHandle` (node's own
 * `sync`, counted and then called, never replaced), in order, until the test ends. `seen` is
 * told of each path as it is synced: what else is on disk at that moment.
 */
export async function recordHandleSyncs (seen?: (path: string) => void): Promise<string[]> {
  const probe = await open(tmpdir(), 'r')
  const handles = Object.getPrototypeOf(probe) as { sync: () => Promise<void> }
  await probe.close()
  const original = handles.sync
  const synced: string[] = []
  const spy = vi.spyOn(handles, 'sync').mockImplementation(async function (this: { fd: number }) {
    const path = readlinkSync(`/proc/self/fd/${this.fd}`)
    synced.push(path)
    seen?.(path)
    await original.call(this)
  })
  onTestFinished(() => { spy.mockRestore() })
  return synced
}
