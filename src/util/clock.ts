import { ConfigError } from '../errors.js'

/** Test-only: where this process's publish clock starts (an RFC 3339 time). */
export const TEST_CLOCK_VARIABLE = 'CIDSYNC_TEST_CLOCK'

/** Where the time comes from, in milliseconds since the epoch. A test passes its own instead of sleeping. */
export interface Clock {
  now: () => number
}

let offsetMs: number | undefined

/**
 * The system clock. Tests that run the CLI and need publishes at distinct, known times set
 * {@link TEST_CLOCK_VARIABLE} for the process instead of sleeping between them: its clock then
 * starts there and runs on at the real rate. The variable is read here only, once a process.
 */
export const systemClock: Clock = {
  now: () => {
    offsetMs ??= testOffset(process.env[TEST_CLOCK_VARIABLE])
    return Date.now() + offsetMs
  }
}

/** The time a publish is stamped with (its manifest's `createdAt`, the last publish's time). */
export function publishNow (clock: Clock = systemClock): Date {
  return new Date(clock.now())
}

function testOffset (raw: string | undefined): number {
  if (raw === undefined || raw.trim() === '') return 0
  const start = Date.parse(raw)
  if (!Number.isFinite(start)) throw new ConfigError(`${TEST_CLOCK_VARIABLE} = ${JSON.stringify(raw)}: expected an RFC 3339 time (a test knob; unset it)`)
  return start - Date.now()
}
