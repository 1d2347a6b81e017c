/** A record's key (its key id and sealing), as a prune's `records` holds it. */
export const RECORD_KEY = "COALESCE(c.key_id, '') || '/' || COALESCE(c.sealing, '')"

/** A record whose objects are valid JSON naming exactly one object: `[[object, ...]]`. Never an error on bad JSON. */
const ONE_OBJECT = `CASE WHEN json_valid(c.objects) THEN json_type(c.objects) = 'array' AND json_array_length(c.objects) = 1
  AND json_type(c.objects, '$[0]') = 'array' AND json_type(c.objects, '$[0][0]') = 'text' ELSE 0 END`

/**
 * The two SELECTs that read each object of each record of `named.content c` that passes `where`:
 * (file, device, key, seq, object, offset, length, parts), in that order. Offsets and lengths that
 * are not integers are kept as unknown (-1, NULL): such a blob is never moved by a repack. A record
 * whose objects do not read names none. Most records name one object: read by path, without a
 * walk of the array, in about a third of the time; the others walk it.
 */
export function recordParts (where: string): readonly [string, string] {
  return [
    `SELECT c.cid, c.device_id, ${RECORD_KEY}, COALESCE(c.seq, 0), c.objects ->> '$[0][0]',
      CASE WHEN json_type(c.objects, '$[0][1]') = 'integer' THEN c.objects ->> '$[0][1]' ELSE -1 END,
      CASE WHEN json_type(c.objects, '$[0][2]') = 'integer' THEN c.objects ->> '$[0][2]' END, 1
    FROM named.content c WHERE ${ONE_OBJECT} AND (${where})`,
    `SELECT c.cid, c.device_id, ${RECORD_KEY}, COALESCE(c.seq, 0), json_extract(part.value, '$[0]'),
      CASE WHEN json_type(part.value, '$[1]') = 'integer' THEN json_extract(part.value, '$[1]') ELSE -1 END,
      CASE WHEN json_type(part.value, '$[2]') = 'integer' THEN json_extract(part.value, '$[2]') END,
      json_array_length(c.objects)
    FROM named.content c, json_each(CASE WHEN json_valid(c.objects) AND json_type(c.objects) = 'array' THEN c.objects ELSE '[]' END) part
    WHERE NOT (${ONE_OBJECT}) AND part.type = 'array' AND json_type(part.value, '$[0]') = 'text' AND (${where})`
  ]
}

/** Whether `records` holds a version of this record (same file, device and key): a later one replaces it. */
export const RECORD_SEEN = `EXISTS (SELECT 1 FROM records n WHERE n.file = c.cid AND n.device = c.device_id AND n.key = ${RECORD_KEY})`
