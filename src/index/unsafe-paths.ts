/**
 * 1 for a folder that is no single name (empty, `.`, `..`, holding a `/` or a NUL); 0 otherwise.
 * A segment's rows are keyed by (device, folder, path), so a restore asks it once per folder
 * ({@link UNSAFE_FOLDERS}) instead of once per row.
 */
export const UNSAFE_FOLDER = "(folder IN ('', '.', '..') OR instr(folder, '/') > 0 OR instr(folder, char(0)) > 0)"

/** A directory's path (one `/` after it) without that `/`: the rest must be a plain relative path. */
const DIR_TRIMMED = "(CASE WHEN substr(path, -1) = '/' THEN substr(path, 1, length(path) - 1) ELSE path END)"

/**
 * 1 for a row whose path is no plain relative path (empty, absolute, `.`/`..`/empty components, a
 * NUL); 0 otherwise. The full test wraps the path in `/`, so every bad component shows as `//`,
 * `/./` or `/../`; a path is asked it only if it could fail it: one starting below `0` (empty,
 * `.`, `/` and a few punctuation marks), holding a NUL, or whose `path || '/'` holds `//` or `/.`
 * (an empty component, a trailing `/`, a component starting with `.`, hidden files included).
 * Any other path has none of the wrapped patterns, so an ordinary row costs a comparison, one
 * NUL search and one GLOB (see docs/benchmarks.md). A directory's row ends with one `/`.
 */
export const UNSAFE_PATH = `(CASE WHEN path >= '0' AND instr(path, char(0)) = 0 AND NOT ((path || '/') GLOB '*/[./]*') THEN 0
  WHEN instr(path, char(0)) > 0 OR instr('/' || ${DIR_TRIMMED} || '/', '//') > 0 THEN 1
  WHEN instr('/' || ${DIR_TRIMMED}, '/.') = 0 THEN 0
  WHEN instr('/' || ${DIR_TRIMMED} || '/', '/./') > 0 OR instr('/' || ${DIR_TRIMMED} || '/', '/../') > 0 THEN 1 ELSE 0 END)`

/**
 * 1 for a row naming no plain relative path ({@link UNSAFE_PATH}) or whose folder is no single
 * name ({@link UNSAFE_FOLDER}): what the walker never writes, and what must never become a path
 * on disk; 0 otherwise.
 */
export const UNSAFE_ROW = `(CASE WHEN ${UNSAFE_FOLDER} THEN 1 ELSE ${UNSAFE_PATH} END)`

/** A query answering the first row (as `folder/path`) that is {@link UNSAFE_ROW}. */
export const UNSAFE_PATHS = `SELECT folder || '/' || path FROM entries WHERE ${UNSAFE_ROW} LIMIT 1`

/**
 * A query answering 1 if a folder of device `@device` is {@link UNSAFE_FOLDER}, else 0: the
 * folders visited one by one down the key (device, folder, path), a seek each, not a row each.
 * Only for a table keyed so (a segment whose schema checked out).
 */
export const UNSAFE_FOLDERS = `WITH RECURSIVE f(folder) AS (
    SELECT MIN(folder) FROM entries WHERE device_id = @device
    UNION ALL SELECT (SELECT MIN(folder) FROM entries WHERE device_id = @device AND folder > f.folder) FROM f WHERE f.folder IS NOT NULL)
  SELECT EXISTS (SELECT 1 FROM f WHERE folder IS NOT NULL AND ${UNSAFE_FOLDER})`
