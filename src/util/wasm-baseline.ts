import { setV8Flag } from './v8-flags.js'

/**
 * Keeps WebAssembly at its baseline compiler (Liftoff) in this process, threads included, from
 * now on. undici parses HTTP with llhttp compiled to wasm; after a few dozen responses V8 compiles
 * its parser again with TurboFan, and that compilation takes ~35 MB for a moment (the daemon's
 * peak RSS at a restart was that moment, just after its first reconciliation). Liftoff's parser
 * is slower per byte, which a process that sends a few requests a second does not see; commands
 * that download much (restore) keep the optimising tier and do not call this. Called before the
 * first wasm is compiled (flags read at compile time); a runtime without the flag goes on as is.
 */
export function wasmBaselineOnly (): void {
  try {
    setV8Flag('--liftoff-only')
  } catch {
    // An embedder that refuses V8 flags: the tier-up and its moment of memory stay.
  }
}
