/**
 * The seconds to give `utimes` for a row's mtime (ms since the epoch). libuv keeps whole
 * microseconds of what it is given, cutting off the rest, and a double near 1.8e9 s is off by up
 * to a quarter of one: `mtimeMs / 1000` brought some files back a microsecond early (a review
 * found 12 of 338). Half a microsecond more makes the cut land on the nearest microsecond.
 */
export function utimesSeconds (mtimeMs: number): number {
  return mtimeMs / 1000 + 5e-7
}
