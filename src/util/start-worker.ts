import { Worker, type WorkerOptions } from 'node:worker_threads'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { reassertV8Flags } from './v8-flags.js'

/**
 * Tests only: the folder of the built workers (dist/bin), set while dist/ is built from the
 * sources as they are now (`test/helpers/built-workers.ts`).
 */
export const BUILT_WORKERS_VARIABLE = 'CIDSYNC_TEST_BUILT_WORKERS'

/**
 * Starts a worker thread from a module beside the caller: `name` without extension. Built code
 * loads `name.js`. Under vitest, where the caller is TypeScript source, the thread loads the built
 * worker when the tests name one ({@link BUILT_WORKERS_VARIABLE}). Otherwise it first registers tsx
 * (a dev dependency) and then loads `name.ts`: tsx's hooks start a thread of their own and compile
 * the worker's modules, far slower than loading the built worker.
 */
export function startWorker (callerUrl: string, name: string, options: WorkerOptions = {}): Worker {
  const worker = newWorker(callerUrl, name, options)
  // Its isolate's start put some of this process's V8 flags back (see reassertV8Flags).
  worker.once('online', reassertV8Flags)
  return worker
}

function newWorker (callerUrl: string, name: string, options: WorkerOptions): Worker {
  const fromSource = callerUrl.endsWith('.ts')
  if (!fromSource) return new Worker(new URL(`./${name}.js`, callerUrl), options)
  const built = process.env[BUILT_WORKERS_VARIABLE]
  if (built !== undefined && built !== '') return new Worker(pathToFileURL(join(built, `${name}.js`)), options)
  const url = new URL(`./${name}.ts`, callerUrl)
  const bootstrap = `import('tsx/esm/api').then(tsx => { tsx.register(); return import(${JSON.stringify(url.href)}) })`
  return new Worker(bootstrap, { ...options, eval: true })
}
