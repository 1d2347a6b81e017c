// What dist/ is built from, and whether the last build saw it as it is now. `npm ci` builds
// (prepare); `npm start` and `npm test` then build again only when an input changed since.
import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

// Besides every file of src/: the build's own settings, and the dependencies esbuild bundles.
const FILES = ['package.json', 'package-lock.json', 'node_modules/.package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'scripts/bundle.mjs', 'scripts/build-inputs.mjs']

/** A digest of each input's path, size and mtime: an edit, a checkout or an install changes it. */
export function buildInputsDigest (root) {
  const src = existsSync(join(root, 'src')) ? readdirSync(join(root, 'src'), { recursive: true, encoding: 'utf8' }).map(f => join('src', f)) : []
  const hash = createHash('sha256')
  for (const file of [...src.sort(), ...FILES]) {
    const stat = statSync(join(root, file), { throwIfNoEntry: false })
    if (stat?.isDirectory() === true) continue
    hash.update(`${file}\0${stat === undefined ? 'missing' : `${stat.size}\0${stat.mtimeMs}`}\n`)
  }
  return hash.digest('hex')
}

const stampOf = root => join(root, 'dist', '.build-inputs')

/** Written by the build, with the digest taken before it read its inputs. */
export function writeBuildStamp (root, digest) {
  writeFileSync(stampOf(root), `${digest}\n`)
}

/** Whether dist/ holds a build of the inputs as they are now. */
export function builtFromCurrentInputs (root) {
  if (!existsSync(join(root, 'dist', 'bin', 'cidsync.js'))) return false
  let stamp
  try {
    stamp = readFileSync(stampOf(root), 'utf8').trim()
  } catch {
    return false
  }
  return stamp === buildInputsDigest(root)
}
