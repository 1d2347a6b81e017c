import { describe, expect, it } from 'vitest'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { sha256 } from 'multiformats/hashes/sha2'
import { base58btc } from 'multiformats/bases/base58'
import { isCanonicalCid } from '../../src/remote/cid-text.js'

const cidOf = async (text: string): Promise<CID> => CID.create(1, raw.code, await sha256.digest(new TextEncoder().encode(text)))

describe('a CID written the one way cidsync writes it', () => {
  it('answers the same for a text asked again, and for other spellings of the same CID', async () => {
    const cid = await cidOf('one')
    const text = cid.toString()
    for (let i = 0; i < 3; i++) expect(isCanonicalCid(text)).toBe(true)
    // Found canonical once is no reason to take another spelling of it.
    expect(isCanonicalCid(text.toUpperCase())).toBe(false)
    expect(isCanonicalCid(cid.toString(base58btc))).toBe(false)
    expect(isCanonicalCid(`${text} `)).toBe(false)
    expect(isCanonicalCid(`${text}/..`)).toBe(false)
    expect(isCanonicalCid('')).toBe(false)
    expect(isCanonicalCid(42)).toBe(false)
  })

  it('keeps answering past the bound of texts it remembers', async () => {
    const texts = await Promise.all(Array.from({ length: 5000 }, async (_, i) => (await cidOf(`file ${i}`)).toString()))
    for (const text of texts) expect(isCanonicalCid(text)).toBe(true)
    for (const text of texts) expect(isCanonicalCid(text)).toBe(true)
    expect(isCanonicalCid((texts[0] as string).slice(0, -1))).toBe(false)
  })
})
