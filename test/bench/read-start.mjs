// `history`, `find --at` and `log` against `--version`, two builds by turns: the median CPU (user
// plus system) of each spawned command, from each build. Only runs by turns compare: the
// machine's speed drifts. Run on the year's state dir (BENCH_KEEP=1 npm run bench -- retention-year):
//   node test/bench/read-start.mjs BASE_CHECKOUT THIS_CHECKOUT STATE/year-device/c.toml [ROUNDS] [CLOCK]
// CLOCK (default 2027-12-31T23:59:00Z): the year's end, as the bench's own queries run at it.
import { spawnSync } from 'node:child_process'

const [,, a, b, config, rounds = '21', clock = '2027-12-31T23:59:00Z'] = process.argv
if (config === undefined) throw new Error('usage: read-start.mjs BASE THIS CONFIG [ROUNDS] [CLOCK]')
const env = { ...process.env, CIDSYNC_TEST_CLOCK: clock }
const commands = {
  version: ['--version'],
  history: ['history', '--config', config, '--limit', '1000'],
  find: ['find', 'f1', '--at', '2027-07-02', '--config', config],
  log: ['log', 'tree/d00000/f24.bin', '--config', config]
}

/** The child's CPU in ms, as the shell's `times` reports it once the child has ended. */
function cpu (dir, args) {
  const r = spawnSync('bash', ['-c', 'node "$@" >/dev/null 2>&1; times', 'x', `${dir}/dist/bin/cidsync.js`, ...args], { env, encoding: 'utf8' })
  const line = r.stdout.trim().split('\n')[1]
  const [user, sys] = line.split(/\s+/).map(t => { const m = /(\d+)m([\d.]+)s/.exec(t); return Number(m[1]) * 60 + Number(m[2]) })
  return (user + sys) * 1000
}

const ms = {}
for (let i = 0; i < Number(rounds); i++) {
  for (const [name, args] of Object.entries(commands)) {
    // Which build goes first alternates too.
    for (const [side, dir] of i % 2 === 0 ? [['a', a], ['b', b]] : [['b', b], ['a', a]]) (ms[`${name} ${side}`] ??= []).push(cpu(dir, args))
  }
}
const median = v => { const s = [...v].sort((x, y) => x - y); return s[Math.floor(s.length / 2)] }
const start = { a: median(ms['version a']), b: median(ms['version b']) }
for (const name of Object.keys(commands)) {
  const [ma, mb] = [median(ms[`${name} a`]), median(ms[`${name} b`])]
  console.log(`${name.padEnd(8)} before ${ma.toFixed(0)} ms (+${(ma - start.a).toFixed(0)})  after ${mb.toFixed(0)} ms (+${(mb - start.b).toFixed(0)})`)
}
