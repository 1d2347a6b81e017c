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
  flags.set.add(flag)
  setFlagsFromString(flag)
}

/**
 * Runs `hook` before this process next changes a V8 flag (at most once). The CLI's code cache is
 * written then: V8 takes a cache only under the flags it was made with, and the daemon sets flags
 * of its own once it runs (`--liftoff-only`, `--expose-gc`), which the next start has not.
 */
export function beforeV8FlagsChange (hook: () => void): void {
  state().beforeChange = hook
}
