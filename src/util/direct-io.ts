import type { FileHandle } from 'node:fs/promises'

/**
 * What O_DIRECT writes are aligned to: their file offset and length (the largest sector size a
 * disk has; 512-byte-sector disks take it too).
 */
export const DIRECT_ALIGN = 4096

/** Where in a buffer the probe looks for an address the kernel takes, in steps of V8's alignment. */
const PROBE_STEP = 16

/**
 * `count` buffers of `size` bytes (a multiple of {@link DIRECT_ALIGN}) whose memory an O_DIRECT
 * write from `handle` takes, or undefined when none is found. Node cannot ask for aligned memory
 * or tell a buffer's address, so one larger buffer is made and a sector written from each offset
 * in turn, at the file's start, until the kernel does not refuse it (EINVAL): a few hundred
 * syscalls at most, once a file. What the probe wrote is overwritten by the file's first write.
 */
export async function alignedBuffers (handle: FileHandle, size: number, count: number): Promise<Buffer[] | undefined> {
  const memory = Buffer.allocUnsafeSlow(size * count + DIRECT_ALIGN)
  memory.fill(0, 0, 2 * DIRECT_ALIGN)
  for (let offset = 0; offset < DIRECT_ALIGN; offset += PROBE_STEP) {
    try {
      await handle.write(memory, offset, DIRECT_ALIGN, 0)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EINVAL') continue
      throw err
    }
    return Array.from({ length: count }, (_, i) => memory.subarray(offset + i * size, offset + (i + 1) * size))
  }
  return undefined
}
