// The restore side of `npm run bench -- content`: cidsync and restic alternated, round by round,
// each started with the page cache in the same state, large and small files reported apart.
import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/**
 * Puts the page cache in one state before every run: dropped where this process may (root), else
 * warmed by reading both repositories whole. Answers which, for the report.
 */
export function cacheLevel (dirs) {
  spawnSync('sync')
  try {
    writeFileSync('/proc/sys/vm/drop_caches', '3')
    return 'dropped'
  } catch {
    for (const dir of dirs) warm(dir)
    return 'warmed'
  }
}

function warm (dir) {
  for (const name of readdirSync(dir, { recursive: true })) {
    const path = join(dir, String(name))
    if (statSync(path, { throwIfNoEntry: false })?.isFile() === true) readFileSync(path)
  }
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

/**
 * Runs each case `rounds` times, the two tools in turn: cidsync first in even rounds, restic first
 * in odd ones, so neither always meets the cache or the disk the other left. Each run restores
 * into a directory of its own (reusing one makes the filesystem's creates slower). Answers, per
 * case, both tools' times by round and their medians, and each tool's peak RSS over its runs.
 */
export async function alternate ({ cases, rounds, ours, theirs, level, fresh }) {
  const results = []
  for (const c of cases) {
    const times = { ours: [], theirs: [], order: [] }
    const peak = { ours: 0, theirs: 0 }
    for (let r = 0; r < rounds; r++) {
      const runs = r % 2 === 0 ? ['ours', 'theirs'] : ['theirs', 'ours']
      times.order.push(runs[0])
      for (const who of runs) {
        level()
        const run = who === 'ours' ? ours : theirs
        const done = await run(c, fresh(`${who}-${c.name}-${r}`))
        times[who].push(done.ms)
        peak[who] = Math.max(peak[who], done.peak ?? 0)
      }
    }
    results.push({ case: c, ...times, peak, median: { ours: median(times.ours), theirs: median(times.theirs) } })
  }
  return results
}
