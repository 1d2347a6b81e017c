/**
 * 1 for a row naming no plain relative path (empty, absolute, `.`/`..`/empty components, a NUL),
 * or whose folder is no single name: what the walker never writes, and what must never become a
 * path on disk; 0 otherwise. The path is wrapped in `/`, so every bad component shows as `//`,
 * `/./` or `/../`. A `CASE` stops at the first answer: a `.` or `..` component needs a component
 * starting with `.` (`/.` in the wrapped path), so an ordinary row is answered after three
 * substring searches, and only rows with such a component (hidden files) search for `/./` and
 * `/../` (a restore walks 1,000,000 rows: 0.41 s of CPU before, 0.25 s).
 */
export const UNSAFE_ROW = `(CASE WHEN instr(path, char(0)) > 0 OR instr('/' || path || '/', '//') > 0 THEN 1
  WHEN folder IN ('', '.', '..') OR instr(folder, '/') > 0 OR instr(folder, char(0)) > 0 THEN 1
  WHEN instr('/' || path, '/.') = 0 THEN 0
  WHEN instr('/' || path || '/', '/./') > 0 OR instr('/' || path || '/', '/../') > 0 THEN 1 ELSE 0 END)`

/** A query answering the first row (as `folder/path`) that is {@link UNSAFE_ROW}. */
export const UNSAFE_PATHS = `SELECT folder || '/' || path FROM entries WHERE ${UNSAFE_ROW} LIMIT 1`
