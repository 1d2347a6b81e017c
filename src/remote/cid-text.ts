import { CID } from 'multiformats/cid'
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
