/**
 * A seeded generator (mulberry32): the same draws each run. Answers an integer from 0 to n - 1.
 * The first draws of a seed are those the tests were written against: keep the arithmetic as it is.
 */
export function seededRandom (seed: number): (n: number) => number {
  let state = seed
  return (n: number): number => {
    state = (state + 0x6D2B79F5) | 0
    let t = Math.imul(state ^ (state >>> 15), 1 | state)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) % n
  }
}
