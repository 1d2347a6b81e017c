import type { CID } from 'multiformats/cid'

/**
 * A CID's text (the same string `cid.toString()` gives) in one flat piece of memory, for
 * remembering many of them. The multibase encoder builds its text a character at a time, and V8
 * keeps such a string as a chain of pieces: about 1.5 KB (Node 20) for each 59-character CID held in a Set
 * or a Map, against about 100 bytes flat. A request or scan remembering a few hundred thousand
 * CIDs held hundreds of megabytes.
 */
export function flatCidText (cid: CID): string {
  return Buffer.from(cid.toString(), 'latin1').toString('latin1')
}
