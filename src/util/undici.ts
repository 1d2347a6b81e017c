import { createRequire } from 'node:module'
import { raiseWasmTieringBudget } from './tiering.js'
import type { Pool } from 'undici'

const require = createRequire(import.meta.url)

/**
 * undici's `Pool` without the rest of undici. The package's index loads all of it (fetch,
 * WebSocket, caches, mocks), which slows the start of every command. The service clients use the
 * pool and its request API alone. The index adds that API to every dispatcher the same way. Where
 * undici's files have moved (another version), the whole package is loaded instead.
 */
export function undiciPool (): typeof Pool {
  loaded ??= load()
  return loaded
}

let loaded: typeof Pool | undefined

function load (): typeof Pool {
  raiseWasmTieringBudget()
  try {
    const dispatcher = require('undici/lib/dispatcher/dispatcher.js') as { prototype: object }
    Object.assign(dispatcher.prototype, require('undici/lib/api/index.js') as object)
    const pool = require('undici/lib/dispatcher/pool.js') as typeof Pool
    if (typeof (pool.prototype as { request?: unknown }).request === 'function') return pool
  } catch {}
  return (require('undici') as { Pool: typeof Pool }).Pool
}
