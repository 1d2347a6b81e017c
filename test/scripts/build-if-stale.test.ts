import { execFile } from 'node:child_process'
import { mkdir, readFile, utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { useTempDir } from '../helpers/temp-dir.js'

const SCRIPTS = fileURLToPath(new URL('../../scripts/', import.meta.url))
const PACKAGE = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { scripts: Record<string, string> }

/** A project laid out as this one, whose build only counts its runs and stamps, as bundle.mjs does. */
async function project (dir: string): Promise<void> {
  await mkdir(join(dir, 'src'), { recursive: true })
  await writeFile(join(dir, 'src', 'a.ts'), 'export const a = 1\n')
  await writeFile(join(dir, 'package-lock.json'), '{}\n')
  await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'p', version: '1.0.0', scripts: { build: 'node build.mjs' } }))
  await writeFile(join(dir, 'build.mjs'), `import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs'
import { buildInputsDigest, writeBuildStamp } from ${JSON.stringify(join(SCRIPTS, 'build-inputs.mjs'))}
const inputs = buildInputsDigest('.')
mkdirSync('dist/bin', { recursive: true })
writeFileSync('dist/bin/cidsync.js', '')
appendFileSync('builds', 'x')
writeBuildStamp('.', inputs)
`)
}

async function ensureBuilt (dir: string): Promise<{ builds: number, stderr: string }> {
  // As under `npm test`: no npm_execpath here, so the script finds npm on PATH.
  const env = { ...process.env, npm_execpath: '' }
  const { stderr } = await promisify(execFile)(process.execPath, [join(SCRIPTS, 'build-if-stale.mjs')], { cwd: dir, env, timeout: 60_000 })
  const builds = await readFile(join(dir, 'builds'), 'utf8').catch(() => '')
  return { builds: builds.length, stderr }
}

describe('building once (scripts/build-if-stale.mjs)', () => {
  it('is what npm start and npm test run, after prepare\'s build on npm ci', () => {
    expect(PACKAGE.scripts.prepare).toBe('npm run build')
    expect(PACKAGE.scripts.pretest).toBe('node scripts/build-if-stale.mjs')
    expect(PACKAGE.scripts.start).toMatch(/^node scripts\/build-if-stale\.mjs && /)
  })

  it('builds when dist/ is missing or older than an input, and not again while nothing changed', async () => {
    const dir = await useTempDir()
    await project(dir)
    expect((await ensureBuilt(dir)).builds).toBe(1)
    const again = await ensureBuilt(dir)
    expect(again.builds).toBe(1)
    expect(again.stderr).toContain('dist/ is built from the current sources: not building again')
    // An edit (a later mtime), a new file and an install each make it build.
    const later = new Date(Date.now() + 5000)
    await utimes(join(dir, 'src', 'a.ts'), later, later)
    expect((await ensureBuilt(dir)).builds).toBe(2)
    await writeFile(join(dir, 'src', 'b.ts'), '')
    expect((await ensureBuilt(dir)).builds).toBe(3)
    await mkdir(join(dir, 'node_modules'))
    await writeFile(join(dir, 'node_modules', '.package-lock.json'), '{}')
    expect((await ensureBuilt(dir)).builds).toBe(4)
    expect((await ensureBuilt(dir)).builds).toBe(4)
  })
})
