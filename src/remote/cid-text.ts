import { CID } from 'multiformats/cid'
import { z } from 'zod'
import { InvalidCidError } from '../errors.js'

/**
 * A CID given by a caller, checked before it is sent: the service answers a malformed one with a
 * 400 at best and "Something went wrong." at worst (IPNS), neither of which says what was wrong.
 */
export function checkedCid (text: string, what = 'CID'): string {
  try {
    CID.parse(text)
    return text
  } catch {
    throw new InvalidCidError(text, what)
  }
}

/**
 * A CID in its canonical text (what `CID.parse(text).toString()` gives back): only the multibase
 * alphabet, never `/`, `.` or `%`, so it is safe in a URL path and a file name.
 */
export type CidText = string & { readonly __cid: unique symbol }

const MAX_CID_TEXT = 256

/**
 * Texts found canonical lately. A string never changes, so one found canonical stays so. The same
 * CIDs come again and again (each manifest of a chain lists its segments), and a parse costs
 * microseconds. Emptied when full: a bound, not a cache to tune.
 */
const knownCanonical = new Set<string>()
const MAX_KNOWN = 4096

/** Whether `text` is a CID written the one way cidsync writes it. */
export function isCanonicalCid (text: unknown): text is CidText {
  if (typeof text !== 'string' || text.length === 0 || text.length > MAX_CID_TEXT) return false
  if (knownCanonical.has(text)) return true
  let canonical: boolean
  try {
    canonical = CID.parse(text).toString() === text
  } catch {
    return false
  }
  if (canonical) {
    if (knownCanonical.size >= MAX_KNOWN) knownCanonical.clear()
    knownCanonical.add(text)
  }
  return canonical
}

/**
 * `text` as a {@link CidText}, or an {@link InvalidCidError}: what every path and URL builder calls
 * on a CID before using it, whoever parsed it before (defence in depth: a CID from the service that
 * slipped past its schema still never becomes `/../..`).
 */
export function canonicalCid (text: string, what = 'CID'): CidText {
  if (!isCanonicalCid(text)) throw new InvalidCidError(text, what)
  return text
}

/** A CID from outside (the service's answers, a manifest): parsed at the edge, refused unless canonical. */
export const cidSchema = z.string().refine((text: string): boolean => isCanonicalCid(text), 'expected a CID')
