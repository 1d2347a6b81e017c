import { describe, expect, it } from 'vitest'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import { parseContentRecord, sealedSize } from '../../src/custody/index.js'
import { ContentIntegrityError } from '../../src/errors.js'

const cidOf = async (text: string): Promise<string> => CID.createV1(0x55, await sha256.digest(new TextEncoder().encode(text))).toString()

describe('parseContentRecord', () => {
  it('takes a well-formed record as it is, without keys it does not know; refuses every field out of bounds, naming it', async () => {
    const file = await cidOf('file')
    const pack = await cidOf('pack')
    const good = { cid: file, size: 10, sealing: 'aes-256-gcm/1', keyId: '0123456789abcdef', keySalt: 'c2FsdA==', objects: [[pack, 4096, sealedSize(10)]] }
    expect(parseContentRecord({ ...good, extra: 'dropped' })).toStrictEqual(good)
    const plain = { cid: file, size: 10, sealing: 'none', keyId: '', keySalt: '', objects: [[file, 0, 10]] }
    expect(parseContentRecord(plain)).toStrictEqual(plain)
    // A file of three chunks in three parts is one cidsync may write (a part a chunk, in the tests' layout).
    const three = 2 * 1024 * 1024 + 5
    const chunk = sealedSize(1024 * 1024)
    const parts = { ...good, size: three, objects: [[pack, 0, chunk], [file, 0, chunk], [pack, chunk, sealedSize(three) - 2 * chunk]] }
    expect(parseContentRecord(parts)).toStrictEqual(parts)

    const refused: Array<[unknown, RegExp]> = [
      [null, /record/],
      [[good], /record/],
      [{ ...good, cid: file.toUpperCase() }, /cid: not a CID/],
      [{ ...good, cid: `B${file.slice(1)}` }, /cid: not a CID/],
      [{ ...good, size: 10.5 }, /size/],
      [{ ...good, size: -1 }, /size/],
      [{ ...good, size: 2 ** 50 + 1 }, /size/],
      [{ ...good, sealing: 'aes-128-gcm/1' }, /sealing/],
      [{ ...good, keyId: '0123456789ABCDEF' }, /keyId/],
      [{ ...good, keySalt: 'a'.repeat(65) }, /keySalt/],
      [{ ...good, keySalt: 'not base64!' }, /keySalt/],
      [{ ...good, objects: [] }, /objects/],
      [{ ...good, objects: [[pack, 4096]] }, /objects\.0/],
      [{ ...good, objects: [[pack, 4096, sealedSize(10), 'more']] }, /objects\.0/],
      [{ ...good, objects: [['../../etc/passwd', 0, sealedSize(10)]] }, /objects\.0\.0: not a CID/],
      [{ ...good, objects: [[pack, 0.5, sealedSize(10)]] }, /objects\.0\.1/],
      [{ ...good, objects: [[pack, 0, `${sealedSize(10)}`]] }, /objects\.0\.2/],
      [{ ...good, objects: [[pack, 0, sealedSize(10) + 1]] }, /spans/],
      [{ ...plain, objects: [[pack, 0, 10]] }, /names another object/],
      [{ ...good, keyId: '' }, /names no key/],
      // Two parts of a file of one chunk: every part holds a chunk at least.
      [{ ...good, objects: [[pack, 0, 8], [pack, 8, sealedSize(10) - 8]] }, /splits its 1 chunks into 2 parts/]
    ]
    for (const [value, message] of refused) {
      let thrown: unknown
      try {
        parseContentRecord(value)
      } catch (err) {
        thrown = err
      }
      expect(thrown, JSON.stringify(value)).toBeInstanceOf(ContentIntegrityError)
      expect((thrown as Error).message, JSON.stringify(value)).toMatch(message)
    }
  })
})
