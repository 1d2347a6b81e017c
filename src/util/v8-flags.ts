import { setFlagsFromString } from 'node:v8'

/**
 * What this process has asked of V8's flags, shared by every copy of this module (the CLI's
 * launcher and its bundle each hold one): the flags set, and who wants to know before the next.
 */
interface FlagState { readonly set: Set<string>, beforeChange: (() => void) | undefined }

const KEY = Symbol.for('cidsync.v8-flags')

function state (): FlagState {
  const processWide = globalThis as { [KEY]?: FlagState }
  processWide[KEY] ??= { set: new Set(), beforeChange: undefined }
  return processWide[KEY]
}

/**
 * Sets a V8 flag (`--name` or `--name=value`), once per process: asked again, nothing happens. The
 * hook {@link beforeV8FlagsChange} left runs first, once. Throws what V8 throws (an embedder that
 * refuses flags); callers that can do without the flag catch it.
 */
export function setV8Flag (flag: string): void {
  const flags = state()
  if (flags.set.has(flag)) return
  const hook = flags.beforeChange
  flags.beforeChange = undefined
  hook?.()
  setFlagsFromString(flag)
  // Recorded once taken: a flag refused is not set again when a worker starts.
  flags.set.add(flag)
}

/**
 * Runs `hook` before this process next changes a V8 flag (at most once). The CLI's code cache is
 * written then: V8 takes a cache only under the flags it was made with, and the daemon sets flags
 * of its own once it runs (`--liftoff-only`, `--expose-gc`), which the next start has not.
 */
export function beforeV8FlagsChange (hook: () => void): void {
  state().beforeChange = hook
}

/** Flags V8 puts back to its own floor each time an isolate starts (a worker thread), on Node 20 and 22. */
const RESET_BY_AN_ISOLATE = ['--semi-space-growth-factor=']

/**
 * Sets again the flags this process set that a worker thread's start put back: V8 raises them to
 * its floor for every isolate it configures, the main thread's included. Called once each worker
 * is online.
 */
export function reassertV8Flags (): void {
  for (const flag of state().set) {
    if (!RESET_BY_AN_ISOLATE.some(prefix => flag.startsWith(prefix))) continue
    try {
      setFlagsFromString(flag)
    } catch {
      // Taken once, refused now: V8's own sizing stays, and no worker's start may throw for it.
    }
  }
}
