import type { Clock } from '../../src/util/clock.js'

const DAY = 24 * 3_600_000

/** A clock the test moves with `move`: it stands still otherwise. */
export interface HandClock extends Clock {
  move: (ms: number) => void
}

/**
 * A clock that stands still until the test moves it: publishes at distinct, known times without a
 * wait between them. It starts a day back, so every time it gives is in the real past, as a
 * publish's time always is to whatever reads it later.
 */
export function handClock (start = Date.now() - DAY): HandClock {
  let at = start
  return { now: () => at, move: (ms) => { at += ms } }
}
