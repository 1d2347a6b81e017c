import { describe, it, expect } from 'vitest'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DaemonProcess } from '../helpers/cli.js'
import { bound } from '../helpers/wait.js'
import { device, drift, expectIndexEqualsFolder, limit, proofDir, report, rows, seeded, size } from './harness.js'

/**
 * Load: files written in bursts into new directories while the daemon runs. The index must equal
 * the folder exactly without a restart; measured: write-to-indexed latency (the row's updated time
 * less the file's mtime) and the daemon's peak resident memory (VmHWM).
 */
const BURSTS = size(6, 20)
const DIRS_PER_BURST = size(10, 100)
const FILES_PER_DIR = 50
const PAUSE_MS = size(1_000, 3_000)

const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN

async function peakRss (pid: number): Promise<number> {
  const text = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '')
  return Number(/VmHWM:\s+(\d+) kB/.exec(text)?.[1] ?? NaN) * 1024
}

describe('proof: load', () => {
  it('files written in bursts into new directories all reach the index without a restart', async () => {
    const rng = seeded('load')
    const root = await proofDir()
    const a = await device(root, 'a', { extra: '[snapshot]\nschedule = "0 0 1 1 *"\nquiet_seconds = 86400\n' })
    const daemon = new DaemonProcess(['--config', a.config])
    await daemon.logged('watching', 30_000)
    const total = BURSTS * DIRS_PER_BURST * FILES_PER_DIR
    const started = Date.now()
    for (let burst = 0; burst < BURSTS; burst++) {
      for (let d = 0; d < DIRS_PER_BURST; d++) {
        const dir = join(a.folder, `burst-${burst}`, `dir-${d}`)
        await mkdir(dir, { recursive: true })
        for (let f = 0; f < FILES_PER_DIR; f++) await writeFile(join(dir, `file-${f}.txt`), `${burst}/${d}/${f} `.repeat(1 + rng.int(20)))
      }
      await new Promise(resolve => setTimeout(resolve, PAUSE_MS))
    }
    const written = Date.now() - started
    // No restart, no rescan request: the live watch alone must get there.
    // A bound to give up at, scaled like every wait here: a slower machine only gets there later.
    const deadline = Date.now() + size(bound(20_000), 600_000)
    let indexed = 0
    while (Date.now() < deadline) {
      indexed = (await rows(a)).length
      if (indexed >= total) break
      await new Promise(resolve => setTimeout(resolve, 250))
    }
    const diff = await drift(a)
    const latencies = (await rows(a)).map(r => r.updatedAt - (r.mtimeMs ?? NaN)).filter(n => Number.isFinite(n)).sort((x, y) => x - y)
    const peak = await peakRss(daemon.child.pid as number)
    report('load', {
      seed: rng.seed, files: total, bursts: BURSTS, newDirectories: BURSTS * DIRS_PER_BURST, writtenInMs: written,
      indexed, missing: diff.missing.length, missingDirectories: new Set(diff.missing.map(p => p.split('/').slice(0, 2).join('/'))).size,
      latencyMs: { p50: Math.round(percentile(latencies, 0.5)), p99: Math.round(percentile(latencies, 0.99)), max: Math.round(latencies[latencies.length - 1] ?? NaN) },
      peakRssMB: Math.round(peak / 2 ** 20)
    })
    await expectIndexEqualsFolder(a, `${total} files in ${BURSTS} bursts, without a restart`)
    expect((await daemon.stop()).code).toBe(0)
  }, limit(90_000, 1_800_000))
})
