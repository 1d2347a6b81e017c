/**
 * Test-only: a size the crash and fault tests shrink through the environment (so a few MiB span
 * many parts, or a prune deletes in several batches). Only a whole number from 1 up to the
 * default is taken: a knob can make a size smaller, never larger.
 */
export function testKnob (name: string, fallback: number): number {
  const value = Number(process.env[name])
  return Number.isInteger(value) && value >= 1 && value <= fallback ? value : fallback
}
