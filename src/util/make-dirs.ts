import { mkdirSync, statSync } from 'node:fs'
import { mkdir, stat } from 'node:fs/promises'
import { dirname, resolve } from 'node:path'

/** Deeper than any real path: a walk up past this many parents is not one. */
const MAX_DEPTH = 4096

const errnoCode = (err: unknown): unknown => (err as { code?: unknown }).code

function notADirectory (path: string): Error {
  return Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${path}'`), { code: 'ENOTDIR', path })
}

/** The dirs to make, outermost first, found by walking up to the first that exists. */
function missingDirs (dir: string, exists: (path: string) => boolean | 'missing'): string[] {
  const missing: string[] = []
  let at = resolve(dir)
  for (let depth = 0; depth < MAX_DEPTH; depth++) {
    const found = exists(at)
    if (found === true) break
    if (found === false) throw notADirectory(at)
    missing.push(at)
    const parent = dirname(at)
    if (parent === at) break
    at = parent
  }
  return missing.reverse()
}

/**
 * `mkdir -p`, one level at a time: Node's `recursive: true` loops forever where the kernel
 * answers ENOENT for a child of a directory that exists (`/proc`), and a path a user gives
 * (`get --to`, `state_dir`) may be such a place. Made dirs get `mode`; existing ones are left.
 */
export function makeDirsSync (dir: string, mode = 0o777): void {
  const missing = missingDirs(dir, path => {
    try {
      return statSync(path).isDirectory()
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return 'missing'
      throw err
    }
  })
  for (const path of missing) {
    try {
      mkdirSync(path, { mode })
    } catch (err) {
      if (errnoCode(err) !== 'EEXIST' || !statSync(path).isDirectory()) throw err
    }
  }
}

/** {@link makeDirsSync}, without blocking the event loop. */
export async function makeDirs (dir: string, mode = 0o777): Promise<void> {
  const missing: string[] = []
  let at = resolve(dir)
  for (let depth = 0; depth < MAX_DEPTH; depth++) {
    const found = await stat(at).then(s => s.isDirectory(), (err: unknown) => {
      if (errnoCode(err) === 'ENOENT') return 'missing' as const
      throw err
    })
    if (found === true) break
    if (found === false) throw notADirectory(at)
    missing.unshift(at)
    const parent = dirname(at)
    if (parent === at) break
    at = parent
  }
  for (const path of missing) {
    try {
      await mkdir(path, { mode })
    } catch (err) {
      if (errnoCode(err) !== 'EEXIST' || !(await stat(path)).isDirectory()) throw err
    }
  }
}
