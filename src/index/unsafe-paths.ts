/**
 * A query answering the first row (as `folder/path`) naming no plain relative path (empty,
 * absolute, `.`/`..`/empty components, a NUL), or whose folder is no single name: what the
 * walker never writes, and what must never become a path on disk. LIKE's `%` only; none of these
 * characters has a case.
 */
export const UNSAFE_PATHS = `SELECT folder || '/' || path FROM entries WHERE
  path = '' OR path LIKE '/%' OR path LIKE '%/' OR path LIKE '%//%' OR instr(path, char(0)) > 0
  OR path IN ('.', '..') OR path LIKE './%' OR path LIKE '../%' OR path LIKE '%/.' OR path LIKE '%/..' OR path LIKE '%/./%' OR path LIKE '%/../%'
  OR folder IN ('', '.', '..') OR instr(folder, '/') > 0 OR instr(folder, char(0)) > 0
  LIMIT 1`
