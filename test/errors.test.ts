import { describe, expect, it } from 'vitest'
import { readFile, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import * as errors from '../src/errors.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

/** Every file under src/, as text. */
async function sources (): Promise<Array<{ path: string, text: string }>> {
  const names = await readdir(join(ROOT, 'src'), { recursive: true })
  return await Promise.all(names.filter(n => n.endsWith('.ts')).map(async n => ({ path: n, text: await readFile(join(ROOT, 'src', n), 'utf8') })))
}

/** docs/errors.md's rows: code to the exit column as written. */
async function documented (): Promise<Map<string, string>> {
  const page = await readFile(join(ROOT, 'docs', 'errors.md'), 'utf8')
  const rows = new Map<string, string>()
  for (const match of page.matchAll(/^\| `(ERR_[A-Z0-9_]+)` \| ([^|]+) \|/gm)) {
    expect(rows.has(match[1] as string), `${match[1]} is listed twice in docs/errors.md`).toBe(false)
    rows.set(match[1] as string, (match[2] as string).trim())
  }
  return rows
}

type ErrorClass = abstract new (...args: never[]) => errors.CidsyncError

/** The classes src/errors.ts exports, with their code and exit code. */
function classes (): Array<{ name: string, code: string, exitCode: number }> {
  return Object.entries(errors)
    .filter(([, value]) => typeof value === 'function' && value.prototype instanceof errors.CidsyncError)
    .map(([name, value]) => ({ name, code: declared(value as ErrorClass, /code = ['"](ERR_[A-Z0-9_]+)['"]/, 'ERR_CIDSYNC'), exitCode: exitOf(value as ErrorClass) }))
}

/**
 * What a class declares for a field, read from its source, else from its parent's (constructors
 * need arguments of every kind, so none is made).
 */
function declared (type: ErrorClass, field: RegExp, fallback: string): string {
  for (let t: unknown = type; typeof t === 'function' && t !== errors.CidsyncError; t = Object.getPrototypeOf(t)) {
    const found = field.exec(String(t))?.[1]
    if (found !== undefined) return found
  }
  return fallback
}

function exitOf (type: ErrorClass): number {
  const name = declared(type, /exitCode = ExitCode\.(\w+)/, 'failure') as keyof typeof errors.ExitCode
  return errors.ExitCode[name]
}

describe('error codes', () => {
  it('are each one class\'s, and every code cidsync can print is in docs/errors.md with its exit code', async () => {
    const rows = await documented()
    const byCode = new Map<string, string>()
    for (const { name, code } of classes()) {
      if (name === 'DaemonReportedError') continue // carries the daemon's code, whatever it is
      expect(byCode.get(code), `${code} is the code of both ${byCode.get(code) ?? ''} and ${name}`).toBeUndefined()
      byCode.set(code, name)
      expect(rows.has(code), `${code} (${name}) is not in docs/errors.md`).toBe(true)
    }
    const literals = new Set<string>()
    for (const { text } of await sources()) for (const m of text.matchAll(/['"`](ERR_[A-Z0-9_]+)['"`]/g)) literals.add(m[1] as string)
    const missing = [...literals].filter(code => !rows.has(code))
    expect(missing, 'codes in src/ with no row in docs/errors.md').toEqual([])
    const stale = [...rows.keys()].filter(code => !literals.has(code))
    expect(stale, 'rows in docs/errors.md for codes src/ no longer has').toEqual([])
  })

  it('exit with the code docs/errors.md gives', async () => {
    const rows = await documented()
    for (const { name, code, exitCode } of classes()) {
      if (name === 'DaemonReportedError') continue
      expect(rows.get(code), `${name}`).toContain(String(exitCode))
    }
  })

  it('are thrown as coded classes: no plain Error thrown in src/', async () => {
    const plain = (await sources()).flatMap(({ path, text }) => text.split('\n').flatMap((line, i) =>
      /throw new Error\(/.test(line) && !/failpoint/.test(line) ? [`src/${path}:${i + 1}`] : []))
    expect(plain).toEqual([])
  })
})
