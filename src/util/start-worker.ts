import { Worker, type WorkerOptions } from 'node:worker_threads'

/**
 * Starts a worker thread from a module beside the caller: `name` without extension. Built code
 * loads `name.js`; under vitest, where the caller is TypeScript source, the thread first registers
 * tsx (a dev dependency) and then loads `name.ts`.
 */
export function startWorker (callerUrl: string, name: string, options: WorkerOptions = {}): Worker {
  const fromSource = callerUrl.endsWith('.ts')
  const url = new URL(`./${name}.${fromSource ? 'ts' : 'js'}`, callerUrl)
  if (!fromSource) return new Worker(url, options)
  const bootstrap = `import('tsx/esm/api').then(tsx => { tsx.register(); return import(${JSON.stringify(url.href)}) })`
  return new Worker(bootstrap, { ...options, eval: true })
}
