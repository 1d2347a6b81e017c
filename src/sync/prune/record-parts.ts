/** The key (its key id and sealing) of record `alias`, as a prune's `records` holds it. */
export const recordKey = (alias: string): string => `COALESCE(${alias}.key_id, '') || '/' || COALESCE(${alias}.sealing, '')`
export const RECORD_KEY = recordKey('c')

/**
 * A record whose objects are valid JSON naming exactly one object: `[[object, ...]]`. Never an
 * error on bad JSON. Only an array has a length, and only an array's first item has a `[0]` of
 * type text: so the two types between need no call of their own.
 */
const oneObject = (alias: string): string => `CASE WHEN json_valid(${alias}.objects) THEN json_array_length(${alias}.objects) = 1 AND json_type(${alias}.objects, '$[0][0]') = 'text' ELSE 0 END`
const ONE_OBJECT = oneObject('c')

/** The array of objects of record `alias`, or an empty one where it does not read. */
const objectsArray = (alias: string): string => `CASE WHEN json_valid(${alias}.objects) AND json_type(${alias}.objects) = 'array' THEN ${alias}.objects ELSE '[]' END`

/** Whether record `alias` names an object that {@link recordParts} reads: a version that names none is no version. */
export const namesAnObject = (alias: string): string =>
  `(${oneObject(alias)} OR EXISTS (SELECT 1 FROM json_each(${objectsArray(alias)}) part WHERE part.type = 'array' AND json_type(part.value, '$[0]') = 'text'))`

/**
 * The two SELECTs that read each object of each record `c` of `from` (`named.content c` by
 * default) that passes `where`:
 * (file, device, key, seq, object, offset, length, parts), in that order. Offsets and lengths that
 * are not integers are kept as unknown (-1, NULL): such a blob is never moved by a repack. A record
 * whose objects do not read names none. Most records name one object: read by path, without a
 * walk of the array, in about a third of the time; the others walk it. The second SELECT tests
 * the record's shape before `where`: most records fail it, and a probe costs more than the test.
 */
export function recordParts (where: string, from = 'named.content c'): readonly [string, string] {
  return [
    `SELECT c.cid, c.device_id, ${RECORD_KEY}, COALESCE(c.seq, 0), c.objects ->> '$[0][0]',
      CASE WHEN json_type(c.objects, '$[0][1]') = 'integer' THEN c.objects ->> '$[0][1]' ELSE -1 END,
      CASE WHEN json_type(c.objects, '$[0][2]') = 'integer' THEN c.objects ->> '$[0][2]' END, 1
    FROM ${from} WHERE (${where}) AND ${ONE_OBJECT}`,
    `SELECT c.cid, c.device_id, ${RECORD_KEY}, COALESCE(c.seq, 0), json_extract(part.value, '$[0]'),
      CASE WHEN json_type(part.value, '$[1]') = 'integer' THEN json_extract(part.value, '$[1]') ELSE -1 END,
      CASE WHEN json_type(part.value, '$[2]') = 'integer' THEN json_extract(part.value, '$[2]') END,
      json_array_length(c.objects)
    FROM ${from}, json_each(${objectsArray('c')}) part
    WHERE NOT (${ONE_OBJECT}) AND (${where}) AND part.type = 'array' AND json_type(part.value, '$[0]') = 'text'`
  ]
}

/** The records `records` holds another version of (same file, device and key): found from there, not by a walk of every record. */
export const SEEN_RECORDS = {
  from: '(SELECT DISTINCT file, device, key FROM records) n JOIN named.content c ON c.device_id = n.device AND c.cid = n.file',
  where: `n.key = ${RECORD_KEY}`
} as const

/** Whether `records` holds no other version of this record: it is the only one read. */
export const UNSEEN_RECORD = `NOT EXISTS (SELECT 1 FROM records n WHERE n.file = c.cid AND n.device = c.device_id AND n.key = ${RECORD_KEY})`
