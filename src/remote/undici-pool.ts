import { createRequire } from 'node:module'
import { setFlagsFromString } from 'node:v8'
import type { Pool } from 'undici'

const require = createRequire(import.meta.url)

/**
 * undici's `Pool` without the rest of undici: the package's index loads all of it (fetch,
 * WebSocket, caches, mocks: 90-160 ms at the start of every command, more on a busy machine),
 * while the service clients use the pool and its request API alone (40-50 ms). The index adds
 * that API to every dispatcher the same way; where undici's files have moved (another version),
 * the whole package is loaded as before.
 */
export function undiciPool (): typeof Pool {
  loaded ??= load()
  return loaded
}

let loaded: typeof Pool | undefined

/**
 * V8 compiles a WebAssembly function again with TurboFan once it has run a budget of about 1.8 MB
 * of code. undici's HTTP parser (llhttp) reaches it within a command's first few answers, and its
 * one large function then takes ~80 ms of CPU to compile on another thread, which the process
 * waits for at exit: 60 ms of a `restore --dry-run`'s 280. With a budget 50 times larger, a
 * command ends before it is spent, and a daemon that parses answers all day still gets the
 * optimised parser. Set before undici compiles llhttp (at a pool's first connection).
 */
const WASM_TIERING_BUDGET = 90_000_000

function load (): typeof Pool {
  setFlagsFromString(`--wasm-tiering-budget=${WASM_TIERING_BUDGET}`)
  try {
    const dispatcher = require('undici/lib/dispatcher/dispatcher.js') as { prototype: object }
    Object.assign(dispatcher.prototype, require('undici/lib/api/index.js') as object)
    const pool = require('undici/lib/dispatcher/pool.js') as typeof Pool
    if (typeof (pool.prototype as { request?: unknown }).request === 'function') return pool
  } catch {}
  return (require('undici') as { Pool: typeof Pool }).Pool
}
