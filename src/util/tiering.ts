import { setV8Flag } from './v8-flags.js'

/**
 * V8 compiles a WebAssembly function again with TurboFan once it has run a budget of code.
 * undici's HTTP parser (llhttp) reaches it within a command's first few answers. Its one large
 * function then compiles on another thread, which the process waits for at exit: a good part of a
 * short command's run (docs/benchmarks.md, "Start-up cut by a third"). With a budget 50 times
 * larger, a command ends before it is spent. A daemon that parses answers all day still gets the
 * optimised parser.
 */
const WASM_TIERING_BUDGET = 90_000_000

/**
 * Raises that budget; call it before undici compiles llhttp (at a pool's first connection). The
 * CLI's launcher calls it before anything is compiled: V8 accepts a code cache only under the
 * flags it was made with, so the flags must be the same from the start of every run.
 */
export function raiseWasmTieringBudget (): void {
  setV8Flag(`--wasm-tiering-budget=${WASM_TIERING_BUDGET}`)
}
