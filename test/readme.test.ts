import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'

const read = async (path: string): Promise<string> => await readFile(new URL(`../${path}`, import.meta.url), 'utf8')

describe('the README', () => {
  it('is short: what cidsync is, the quick start, two devices, where to read on', async () => {
    const readme = await read('README.md')
    expect(readme.split('\n').length).toBeLessThan(120)
    const headings = readme.split('\n').filter(line => line.startsWith('## '))
    expect(headings.slice(0, 3)).toEqual(['## Quick start', '## Two devices', '## Where to read on'])
    expect(readme).toContain('(docs/two-devices.md)')
    expect(readme).toContain('(docs/reference/README.md)')
    // No table of commands: each command's help is its reference.
    expect(readme).not.toMatch(/^\| `cidsync /m)
  })

  it('gives the commands CI runs: npm ci && npm start for the daemon on the embedded default, npm test and npm run test:slow for the tests', async () => {
    const [readme, ci, manifest] = await Promise.all([read('README.md'), read('.ci/run'), read('package.json')])
    expect(readme).toMatch(/^npm ci && npm start {2,}# /m)
    expect(readme).toMatch(/^npm test {2,}# /m)
    expect(ci).toMatch(/^npm ci /m)
    expect(readme).toMatch(/^npm run test:slow {2,}# /m)
    expect(ci).toMatch(/^npm test /m)
    expect(ci).toMatch(/^npm run test:slow /m)
    const scripts = (JSON.parse(manifest) as { scripts: Record<string, string> }).scripts
    // The daemon runs what was built: a build of current sources, skipped when nothing changed.
    expect(scripts.start).toBe('node scripts/build-if-stale.mjs && node dist/bin/cidsync.js daemon --config config/quickstart.toml')
    expect(scripts.pretest).toBe('node scripts/build-if-stale.mjs')
    expect(scripts['pretest:slow']).toBe(scripts.pretest)
    expect(await read('config/quickstart.toml')).not.toMatch(/^mode = "remote"/m)
  })
})
