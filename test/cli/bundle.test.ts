import { readdir, readFile } from 'node:fs/promises'
import { basename } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { runCli } from '../helpers/cli.js'

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
    const chunks = (await readdir(BIN)).filter(f => f.endsWith('.js'))
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

  it('holds no chunk that exports only a CommonJS module\'s default (named imports of it would be undefined)', async () => {
    const chunks = (await readdir(BIN)).filter(f => f.endsWith('.js'))
    for (const chunk of chunks) expect(await readFile(`${BIN}${chunk}`, 'utf8'), chunk).not.toMatch(/export default require_[\w$]+\(\)/)
  })
})
