/**
 * What to give `utimes` for a row's mtime (ms since the epoch). libuv keeps whole microseconds of
 * the seconds it is given, cutting off the rest, and a double near 1.8e9 s is off by up to a
 * quarter of one: `mtimeMs / 1000` brought some files back a microsecond early (a review found 12
 * of 338); half a microsecond more makes the cut land on the nearest one. Node takes a negative
 * number as "now", so a time before 1970 goes as a Date (to the millisecond).
 */
export function utimesTime (mtimeMs: number): number | Date {
  return mtimeMs < 0 ? new Date(mtimeMs) : mtimeMs / 1000 + 5e-7
}
