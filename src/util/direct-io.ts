import { writeSync } from 'node:fs'

/**
 * What O_DIRECT writes are aligned to: their file offset and length (the largest sector size a
 * disk has; 512-byte-sector disks take it too).
 */
export const DIRECT_ALIGN = 4096

/** Where in a buffer the probe looks for an address the kernel takes, in steps of V8's alignment. */
const PROBE_STEP = 16

/**
 * Whether an O_DIRECT write of `sector` (DIRECT_ALIGN bytes) at the file's start is taken: EINVAL
 * is an address the kernel refuses, or a filesystem that opened with the flag and refuses its
 * writes. What it wrote is overwritten by the file's first write (or cut by its truncate).
 */
function takesDirectWrite (fd: number, sector: Uint8Array): boolean {
  try {
    writeSync(fd, sector, 0, sector.byteLength, 0)
    return true
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EINVAL') return false
    throw err
  }
}

/**
 * `count` buffers of `size` bytes (a multiple of {@link DIRECT_ALIGN}) whose memory an O_DIRECT
 * write from `fd` takes, or undefined when none is found. Node cannot ask for aligned memory or
 * tell a buffer's address, so one larger buffer is made and a sector written from each offset in
 * turn, at the file's start, until the kernel does not refuse it: a few hundred small writes at
 * most, once a file (an export's CAR).
 */
export function alignedBuffers (fd: number, size: number, count: number): Buffer[] | undefined {
  const memory = Buffer.allocUnsafeSlow(size * count + DIRECT_ALIGN)
  memory.fill(0, 0, 2 * DIRECT_ALIGN)
  for (let offset = 0; offset < DIRECT_ALIGN; offset += PROBE_STEP) {
    if (!takesDirectWrite(fd, memory.subarray(offset, offset + DIRECT_ALIGN))) continue
    return Array.from({ length: count }, (_, i) => memory.subarray(offset + i * size, offset + (i + 1) * size))
  }
  return undefined
}
