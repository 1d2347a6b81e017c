import { cpSync, writeFileSync } from 'node:fs'
import { readdir, readFile } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

const BIN = fileURLToPath(new URL('../../dist/bin/', import.meta.url))
const SRC = fileURLToPath(new URL('../../src/', import.meta.url))
const PACKAGE = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string, bin: Record<string, string> }

describe('the bundled CLI (dist/bin, scripts/bundle.mjs)', () => {
  it('is what package.json\'s bin names, and tells the version package.json holds', async () => {
    expect(PACKAGE.bin.cidsync).toBe('dist/bin/cidsync.js')
    const shown = await runCli(['--version'])
    expect(shown.code).toBe(0)
    expect(shown.stdout.trim()).toBe(PACKAGE.version)
  })

  it('has a file for every worker thread a module starts, named as the module that starts it asks', async () => {
    const workers = (await readdir(SRC, { recursive: true })).filter(f => f.endsWith('-worker.ts') && basename(f) !== 'start-worker.ts')
    expect(workers.length).toBeGreaterThan(0)
    const built = new Set(await readdir(BIN))
    for (const worker of workers) expect(built.has(basename(worker).replace(/\.ts$/, '.js')), worker).toBe(true)
  })

  it('keeps the name of every class of src/ (an error\'s name is shown and logged): none renamed for a collision', async () => {
    const sources = (await readdir(SRC, { recursive: true })).filter(f => f.endsWith('.ts'))
    const classes = new Set<string>()
    for (const file of sources) for (const [, name] of (await readFile(`${SRC}${file}`, 'utf8')).matchAll(/^(?:export )?(?:abstract )?class (\w+)/gm)) classes.add(name as string)
    expect(classes.has('UsageError')).toBe(true)
    const chunks = (await readdir(BIN)).filter(f => f.endsWith('.js') || f.endsWith('.cjs'))
    const renamed: string[] = []
    for (const chunk of chunks) {
      const text = await readFile(`${BIN}${chunk}`, 'utf8')
      // esbuild writes a class as `var Name=class` (or `class Name`); a collision makes it `Name2`.
      for (const [, name, suffix] of [...text.matchAll(/(?:^|[^\w$.])([A-Za-z_$][\w$]*?)(\d+)\s*=\s*class\b/gm), ...text.matchAll(/(?:^|[;}])class ([A-Za-z_$][\w$]*?)(\d+)[\s{]/gm)]) {
        if (classes.has(name as string)) renamed.push(`${name as string}${suffix as string} in ${chunk}`)
      }
    }
    expect(renamed).toEqual([])
  })

  it('runs the CLI as one CommonJS file with no import() left in it: a script compiled from V8\'s code cache has no loader for one', async () => {
    const cli = await readFile(`${BIN}cidsync-main.cjs`, 'utf8')
    // esbuild writes a dynamic import it leaves as `import("...")`; the one in a thread's bootstrap string is source text.
    expect(cli).not.toMatch(/\bimport\("/)
    const status = await runCli(['status', '--config', '/nonexistent/c.toml'], { env: { ...process.env, CIDSYNC_CODE_CACHE: '0' } })
    expect(status.stderr).not.toContain('ExperimentalWarning')
  })

  it('holds zod\'s English messages alone: its other locales, run at every start, are left out', async () => {
    const cli = await readFile(`${BIN}cidsync-main.cjs`, 'utf8')
    expect(cli).toContain('Invalid input')
    // German and French messages, as zod's locales word them.
    expect(cli).not.toContain('Eingabe')
    expect(cli).not.toContain('attendu')
    const shown = await runCli(['history', '--config', await badConfig()])
    expect(shown.stderr).toContain('expected a string')
  })

  it('holds no chunk that exports only a CommonJS module\'s default (named imports of it would be undefined)', async () => {
    const chunks = (await readdir(BIN)).filter(f => f.endsWith('.js'))
    for (const chunk of chunks) expect(await readFile(`${BIN}${chunk}`, 'utf8'), chunk).not.toMatch(/export default require_[\w$]+\(\)/)
  })

  it('a copy without its package.json says the install is damaged, coded, in one line (no stack), and never takes a package.json planted further up', async () => {
    const dir = await useTempDir()
    const install = join(dir, 'planted', 'inst')
    cpSync(BIN, join(install, 'dist', 'bin'), { recursive: true })
    const run = async (): Promise<{ code: number | null, stdout: string, stderr: string }> => await runCli(['--version'], { script: join(install, 'dist', 'bin', 'cidsync.js') })
    const missing = await run()
    expect(missing.code).toBe(1)
    expect(missing.stdout).toBe('')
    expect(missing.stderr).toMatch(/^cidsync: cidsync's install at .* is damaged: its package\.json is missing; install cidsync again \[ERR_INSTALL_DAMAGED\]\n$/)
    // One level above the package's root: someone else's directory, never read.
    const evil = JSON.stringify({ name: 'cidsync', version: '6.6.6', bin: { cidsync: '/tmp/evil.js' } })
    writeFileSync(join(dir, 'planted', 'package.json'), evil)
    expect((await run()).stderr).toContain('[ERR_INSTALL_DAMAGED]')
    // Its own package.json naming a script outside it (absolute, or up and out) is refused too.
    for (const cli of ['/tmp/evil.js', '../../evil.js', 'dist/../../evil.js']) {
      writeFileSync(join(install, 'package.json'), JSON.stringify({ name: 'cidsync', version: '6.6.6', bin: { cidsync: cli } }))
      const refused = await run()
      expect(refused.stderr, cli).toContain('names no script of its own')
      expect(refused.code, cli).toBe(1)
    }
    // (A package.json that is not JSON node's own loader refuses, before any of cidsync runs.)
    writeFileSync(join(install, 'package.json'), JSON.stringify({ name: 'cidsync', version: '6.6.6', bin: { cidsync: 'dist/bin/cidsync.js' } }))
    expect((await run()).stdout.trim()).toBe('6.6.6')
  })
})

/** A config whose state_dir is a number: zod's English message names what it expected. */
async function badConfig (): Promise<string> {
  const path = join(await useTempDir(), 'bad.toml')
  writeFileSync(path, 'state_dir = 5\nnamespace = "x"\n')
  return path
}
