import { describe, expect, it } from 'vitest'
import { spawn } from 'node:child_process'
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

// Every bench of `npm run bench`, run to its end at a tiny scale: a bench that no longer runs
// against the code (an API renamed under it) fails here, not on the day someone measures. Nothing
// here is timed: the figures are the benches' own, read by people.

const RUN = fileURLToPath(new URL('./run.mjs', import.meta.url))
/** Each bench at the least work that still takes every path it measures. */
const TINY: NodeJS.ProcessEnv = {
  BENCH_CID_MIB: '2',
  BENCH_FILES: '300',
  BENCH_INDEX_SETTLED_MS: '1000',
  BENCH_RECORDS: '300',
  BENCH_SERVICE_MIB: '2',
  BENCH_ENTRIES: '2000',
  BENCH_RESTIC_RUNS: '1',
  BENCH_HISTORY: '5',
  BENCH_RESTORE_ROUNDS: '1',
  BENCH_FIND_ROWS: '2000',
  BENCH_FIND_PUBLISHES: '2',
  BENCH_FIND_SNAPSHOTS: '2',
  BENCH_FIND_RESTIC_FILES: '300',
  BENCH_UPLOAD_MIB: '2',
  BENCH_CONTENT_SCALE: '0.005',
  BENCH_CONTENT_SMALL: '200',
  BENCH_CONTENT_ROUNDS: '1',
  BENCH_CONTENT_GET_MIB: '4',
  BENCH_LEAN_FILES: '300',
  BENCH_LEAN_RUNS: '1',
  BENCH_LEAN_IDLE_MS: '1000',
  BENCH_EXITS_PUBLISHES: '2',
  BENCH_EXITS_MIB: '2',
  BENCH_EXITS_ROUNDS: '1',
  BENCH_MIRROR_PUBLISHES: '2',
  BENCH_MIRROR_DOWN: '2',
  BENCH_RETENTION_SCALE: '0.0001',
  BENCH_RETENTION_PUBLISHES: '4',
  BENCH_RETENTION_DAYS: '10',
  BENCH_RETENTION_ROUNDS: '2'
}
/** A bench that has not ended by then is stuck, not slow: these runs take seconds. */
const BENCH_DEADLINE_MS = 240_000
// The exits bench runs the mirrors bench after its own (`run.mjs`): one run covers both.
const BENCHES = ['cid', 'index', 'service', 'snapshot', 'sync', 'find', 'upload', 'content', 'lean', 'exits', 'retention'] as const

async function runBench (name: string, dir: string): Promise<{ code: number | null, output: string }> {
  const child = spawn(process.execPath, ['--expose-gc', RUN, name], { env: { ...process.env, ...TINY, BENCH_DIR: dir }, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (d: Buffer) => { output += d.toString() })
  child.stderr.on('data', (d: Buffer) => { output += d.toString() })
  const timer = setTimeout(() => { child.kill('SIGKILL') }, BENCH_DEADLINE_MS)
  try {
    const code = await new Promise<number | null>((resolve, reject) => { child.once('error', reject); child.once('exit', resolve) })
    return { code, output }
  } finally {
    clearTimeout(timer)
  }
}

describe('npm run bench', () => {
  for (const name of BENCHES) {
    it(`runs the ${name} bench to its table, and leaves nothing behind`, async () => {
      const dir = await mkdtemp(join(tmpdir(), 'cidsync-benches-'))
      try {
        const { code, output } = await runBench(name, dir)
        expect(code, output.slice(-4000)).toBe(0)
        const rows = output.split('\n').filter(line => line.startsWith('| ') && !line.startsWith('| measure'))
        expect(rows.length, output.slice(-4000)).toBeGreaterThan(0)
        expect(await readdir(dir)).toEqual([])
      } finally {
        await rm(dir, { recursive: true, force: true })
      }
    }, BENCH_DEADLINE_MS + 30_000)
  }
})
