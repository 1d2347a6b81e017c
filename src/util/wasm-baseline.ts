import { setV8Flag } from './v8-flags.js'

/**
 * Keeps WebAssembly at its baseline compiler (Liftoff) in this process, threads included, from
 * now on. undici parses HTTP with llhttp compiled to wasm. After a few dozen responses V8 compiles
 * its parser again with TurboFan, and that compilation takes tens of MB for a moment: it set the
 * daemon's peak memory (docs/benchmarks.md, "Memory beside syncthing"). Liftoff's parser is slower
 * per byte, which a process that sends a few requests a second does not see. Commands that
 * download much (restore) keep the optimising tier and do not call this. Call it before the first
 * wasm is compiled, since flags are read at compile time. A runtime without the flag goes on as is.
 */
export function wasmBaselineOnly (): void {
  try {
    setV8Flag('--liftoff-only')
  } catch {
    // An embedder that refuses V8 flags: the tier-up and its moment of memory stay.
  }
}
