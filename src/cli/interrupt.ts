/**
 * Ctrl-C and SIGTERM as a stop a command can finish cleanly: the first aborts its signal, so the
 * command ends its work in hand and says what it did. A second one ends the process at once, as
 * Node's default would have.
 */
import { AbortedError } from '../errors.js'

/** The reason a stop aborts with: which signal came. */
export class StoppedBy extends AbortedError {
  constructor (readonly signal: NodeJS.Signals) {
    super(`stopped by ${signal}`)
  }
}

const STOPS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM']

/**
 * Runs `fn` with a signal that Ctrl-C or SIGTERM aborts; the handlers go once it settles.
 * `stopping` is told at the first, before the work in hand ends.
 */
export async function untilInterrupted<T> (fn: (signal: AbortSignal) => Promise<T>, stopping?: (signal: NodeJS.Signals) => void): Promise<T> {
  const controller = new AbortController()
  const stop = (signal: NodeJS.Signals): void => {
    if (!controller.signal.aborted) {
      controller.abort(new StoppedBy(signal))
      stopping?.(signal)
      return
    }
    for (const each of STOPS) process.off(each, stop)
    process.kill(process.pid, signal)
  }
  for (const each of STOPS) process.on(each, stop)
  try {
    return await fn(controller.signal)
  } finally {
    for (const each of STOPS) process.off(each, stop)
  }
}

/** What `promise` answers, or undefined once `signal` aborts first: a wait a stop may cut short. */
export async function unlessStopped<T> (promise: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  if (signal.aborted) return undefined
  let onAbort: (() => void) | undefined
  const stopped = new Promise<undefined>((resolve) => { onAbort = () => { resolve(undefined) }; signal.addEventListener('abort', onAbort, { once: true }) })
  try {
    return await Promise.race([promise, stopped])
  } finally {
    if (onAbort !== undefined) signal.removeEventListener('abort', onAbort)
  }
}
