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

/**
 * V8 optimises a JavaScript function with TurboFan once it has run a budget of bytecode. In a
 * command of a second or two that is dozens of functions, each compiled on another thread for
 * more CPU than its optimised code then saves: a sixth of a small restore's CPU (docs/benchmarks.md,
 * "TurboFan in a short command"). With a budget 16 times larger, only code that runs long is
 * optimised; a long restore, a scan or a daemon still gets it, a little later.
 */
const JS_TIERING_BUDGET = 16 * 67_584

/** Raises that budget; the CLI's launcher calls it before anything is compiled, as for wasm above. */
export function raiseJsTieringBudget (): void {
  setV8Flag(`--interrupt-budget=${JS_TIERING_BUDGET}`)
}
