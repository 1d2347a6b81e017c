// `npm run build`, after tsc: the CLI and each worker thread bundled into dist/bin/ (esbuild).
// A command then starts from a few files instead of resolving, reading and compiling ~700
// modules one by one: `restore --dry-run` 0.47 -> 0.33 s, a first index of 100,000 files
// 0.2-0.5 s sooner (docs/benchmarks.md, "Start-up"). The CLI is one CommonJS file,
// cidsync-main.cjs, run by its launcher cidsync.js through V8's code cache (src/cli/code-cache.ts;
// node 20 has none for ES modules); the launcher and the threads are ES modules with shared
// chunks. tsc's dist/ stays beside it: the modules the tests and benches import, and
// `dist/cli/main.js`, the same CLI unbundled.
import { build } from 'esbuild'
import { cpSync, readdirSync, rmSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { buildInputsDigest, writeBuildStamp } from './build-inputs.mjs'

const OUT = 'dist/bin'
// Taken before esbuild reads the sources: an edit made during the build leaves the stamp stale.
const inputs = buildInputsDigest('.')

// A thread is started from `<name>.js` beside the module that starts it (util/start-worker.ts);
// in the bundle every module sits in dist/bin/, so each worker is an entry of its own name there.
// (util/start-worker.ts is what starts them, not one.)
const workers = readdirSync('src', { recursive: true, encoding: 'utf8' })
  .filter(file => file.endsWith('-worker.ts') && file !== join('util', 'start-worker.ts'))
const entryPoints = { cidsync: 'src/cli/launch.ts' }
for (const file of workers) {
  const name = basename(file, '.ts')
  if (name in entryPoints) throw new Error(`two worker modules named ${name}: their bundles would share dist/bin/${name}.js; rename one`)
  entryPoints[name] = join('src', file)
}

/**
 * zod's classic API re-exports every locale's messages as a namespace, which no bundler can
 * shake: 300 KB of the CLI's bundle, run at each start. cidsync uses English only (zod's
 * default), so the namespace holds English alone.
 */
const englishOnly = {
  name: 'zod-english-only',
  setup (build) {
    build.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) => {
      if (!args.importer.includes(join('node_modules', 'zod'))) return undefined
      return { path: join(dirname(args.importer), '..', 'locales', 'english-only.js'), namespace: 'zod-english-only' }
    })
    build.onLoad({ filter: /.*/, namespace: 'zod-english-only' }, (args) => ({
      contents: "export { default as en } from './en.js'",
      resolveDir: dirname(args.path),
      loader: 'js'
    }))
  }
}

const common = {
  outdir: OUT,
  plugins: [englishOnly],
  bundle: true,
  platform: 'node',
  target: 'node20.19',
  // A native addon (found by its own path at run time) and an optional pretty-printer; and
  // undici, which is required when asked (util/undici.ts): all of it takes 90-160 ms to load.
  external: ['better-sqlite3', 'pino-pretty', 'undici'],
  // No keepNames: its helper renames every function as it is made, per file hashed too (60-100 ms
  // of a first index of 100,000 files). A class keeps its name unless two collide in a chunk,
  // which test/cli/bundle.test.ts refuses for every class of src/.
  keepNames: false,
  // Less source for V8 to read at each start (2.7 -> 2.0 MB; `restore --dry-run` 20-40 ms
  // sooner); names are kept, and the maps beside give `node --enable-source-maps` real stacks.
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: 'none',
  sourcemap: 'linked',
  logLevel: 'warning'
}

rmSync(OUT, { recursive: true, force: true })
// The CLI: one file, which the launcher compiles with V8's code cache. Its modules ask for their
// own place with `import.meta.url` (threads, assets, package.json): the bundle's, dist/bin/.
await build({
  ...common,
  entryPoints: { 'cidsync-main': 'src/cli/main.ts' },
  format: 'cjs',
  outExtension: { '.js': '.cjs' },
  define: { 'import.meta.url': '__cidsyncModuleUrl' },
  banner: { js: "var __cidsyncModuleUrl = require('node:url').pathToFileURL(__filename).href;" }
})
// The launcher and every thread.
await build({
  ...common,
  entryPoints,
  splitting: true,
  format: 'esm',
  chunkNames: 'chunk-[hash]',
  // CommonJS dependencies call require() for node's own modules, which ESM output has no binding for.
  banner: { js: "import { createRequire as __cidsyncCreateRequire } from 'node:module'; const require = __cidsyncCreateRequire(import.meta.url);" }
})

// The dashboard reads its files beside its own module: in tsc's dist/dashboard/ and in the bundle's dist/bin/.
for (const to of ['dist/dashboard/assets', join(OUT, 'assets')]) cpSync('src/dashboard/assets', to, { recursive: true })
// Last: `npm start` and `npm test` skip the build while the inputs match (scripts/build-if-stale.mjs).
writeBuildStamp('.', inputs)
