// docs/reference/: a page per command, written by the built CLI from its own help. Pages of
// commands that are gone are removed first, so the folder holds what the program has, no more.
import { execFileSync } from 'node:child_process'
import { readdirSync, rmSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const reference = `${root}docs/reference`
for (const name of readdirSync(reference, { withFileTypes: true })) {
  if (name.isFile() && name.name.endsWith('.md')) rmSync(`${reference}/${name.name}`)
}
execFileSync(process.execPath, [`${root}dist/bin/cidsync.js`, 'generate', '--markdown-dir', reference], { stdio: 'inherit' })
