// `npm run build`, after tsc: the CLI and each worker thread bundled into dist/bin/ (esbuild).
// A command then starts from a few files instead of resolving, reading and compiling ~700
// modules one by one: `restore --dry-run` 0.47 -> 0.33 s, a first index of 100,000 files
// 0.2-0.5 s sooner (docs/benchmarks.md, "Start-up"). tsc's dist/ stays beside it: the modules
// the tests and benches import, and `dist/cli/main.js`, the same CLI unbundled.
import { build } from 'esbuild'
import { cpSync, readdirSync, rmSync } from 'node:fs'
import { basename, join } from 'node:path'

const OUT = 'dist/bin'

// A thread is started from `<name>.js` beside the module that starts it (util/start-worker.ts);
// in the bundle every module sits in dist/bin/, so each worker is an entry of its own name there.
// (util/start-worker.ts is what starts them, not one.)
const workers = readdirSync('src', { recursive: true, encoding: 'utf8' })
  .filter(file => file.endsWith('-worker.ts') && file !== join('util', 'start-worker.ts'))
const entryPoints = { cidsync: 'src/cli/main.ts' }
for (const file of workers) {
  const name = basename(file, '.ts')
  if (name in entryPoints) throw new Error(`two worker modules named ${name}: their bundles would share dist/bin/${name}.js; rename one`)
  entryPoints[name] = join('src', file)
}

rmSync(OUT, { recursive: true, force: true })
await build({
  entryPoints,
  outdir: OUT,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20.19',
  chunkNames: 'chunk-[hash]',
  // A native addon (found by its own path at run time) and an optional pretty-printer; and
  // undici, which is imported when asked (`import('undici')`): esbuild's chunk of a CommonJS
  // module imported that way exports only its default, not `request` (checked in test/cli/bundle.test.ts).
  external: ['better-sqlite3', 'pino-pretty', 'undici'],
  // No keepNames: its helper renames every function as it is made, per file hashed too (60-100 ms
  // of a first index of 100,000 files). A class keeps its name unless two collide in a chunk,
  // which test/cli/bundle.test.ts refuses for every class of src/.
  keepNames: false,
  // CommonJS dependencies call require() for node's own modules, which ESM output has no binding for.
  banner: { js: "import { createRequire as __cidsyncCreateRequire } from 'node:module'; const require = __cidsyncCreateRequire(import.meta.url);" },
  // Less source for V8 to read at each start (2.7 -> 2.0 MB; `restore --dry-run` 20-40 ms
  // sooner); names are kept, and the maps beside give `node --enable-source-maps` real stacks.
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: 'none',
  sourcemap: 'linked',
  logLevel: 'warning'
})

// The dashboard reads its files beside its own module: in tsc's dist/dashboard/ and in the bundle's dist/bin/.
for (const to of ['dist/dashboard/assets', join(OUT, 'assets')]) cpSync('src/dashboard/assets', to, { recursive: true })
