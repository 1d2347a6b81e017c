import { ConfigError } from '../errors.js'

/** Test-only: where this process's publish clock starts (an RFC 3339 time). */
export const TEST_CLOCK_VARIABLE = 'CIDSYNC_TEST_CLOCK'

let offsetMs: number | undefined

/**
 * The time a publish is stamped with (its manifest's `createdAt`, the last publish's time): the
 * system clock. Tests that need publishes at distinct, known times set {@link TEST_CLOCK_VARIABLE}
 * for the process instead of sleeping between them: its clock then starts there and runs on at the
 * real rate. Read here only, once a process.
 */
export function publishNow (): Date {
  offsetMs ??= testOffset(process.env[TEST_CLOCK_VARIABLE])
  return new Date(Date.now() + offsetMs)
}

function testOffset (raw: string | undefined): number {
  if (raw === undefined || raw.trim() === '') return 0
  const start = Date.parse(raw)
  if (!Number.isFinite(start)) throw new ConfigError(`${TEST_CLOCK_VARIABLE} = ${JSON.stringify(raw)}: expected an RFC 3339 time (a test knob; unset it)`)
  return start - Date.now()
}
