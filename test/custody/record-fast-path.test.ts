import { describe, expect, it } from 'vitest'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import { base32 } from 'multiformats/bases/base32'
import { base36 } from 'multiformats/bases/base36'
import { base58btc } from 'multiformats/bases/base58'
import { contentRecordSchema, parseContentRecord, sealedSize } from '../../src/custody/index.js'

// The schema is the rule: the hand check must never be looser than it.
const recordSchema = contentRecordSchema

function accepted (value: unknown): boolean {
  try { parseContentRecord(value); return true } catch { return false }
}

const cidOf = async (text: string): Promise<CID> => CID.createV1(0x55, await sha256.digest(new TextEncoder().encode(text)))

describe('parseContentRecord fast path', () => {
  it('takes nothing the schema refuses', async () => {
    const file = await cidOf('file')
    const pack = await cidOf('pack')
    const good = { cid: file.toString(), size: 10, sealing: 'aes-256-gcm/1', keyId: '0123456789abcdef', keySalt: 'c2FsdA==', objects: [[pack.toString(), 4096, sealedSize(10)]] }
    const mk = (over: Record<string, unknown>): unknown => ({ ...good, ...over })
    const dated = Object.assign(new Date(0), good)
    const { size: _s, ...noSize } = good
    const mapped = Object.defineProperty(Object.assign(new Map(), noSize), 'size', { value: 10 })
    const setted = Object.defineProperty(Object.assign(new Set(), noSize), 'size', { value: 10 })
    const thenable = { ...good, then: () => {}, catch: () => {} }
    const sparse: unknown[] = [good.objects[0]]; sparse.length = 2
    const extraProp = Object.assign([[pack.toString(), 4096, sealedSize(10)]], { x: 1 })
    const spanExtra = [Object.assign([pack.toString(), 4096, sealedSize(10)], { y: 2 })]
    const inherited = Object.create(good)
    const nullProto = Object.assign(Object.create(null), good)
    const protoKey = JSON.parse(JSON.stringify({ ...good }).replace('{', '{"__proto__":{"cid":"x"},'))
    const candidates: unknown[] = [
      good, dated, mapped, setted, thenable, inherited, nullProto, protoKey,
      mk({ size: -0 }), mk({ objects: [[pack.toString(), -0, sealedSize(10)]] }),
      mk({ size: 1e21 }), mk({ objects: sparse }), mk({ objects: extraProp }), mk({ objects: spanExtra }),
      mk({ cid: file.toString(base32) }), mk({ cid: file.toString(base36) }), mk({ cid: file.toString(base58btc) }),
      mk({ cid: 'x' }),
      mk({ cid: new String(file.toString()) }), mk({ size: new Number(10) }), mk({ size: 10n }),
      mk({ keyId: '0123456789abcdef\n' }), mk({ keySalt: 'a'.repeat(64) }), mk({ keySalt: 'a'.repeat(65) }),
      mk({ cid: 'b' + 'a'.repeat(255) }), mk({ cid: 'b' + 'a'.repeat(256) }),
      mk({ objects: new Array(3) }), mk({ objects: [[pack.toString(), 4096, sealedSize(10), undefined]] }),
      mk({ objects: Object.assign(new Array(3), { 0: pack.toString(), 1: 4096, 2: sealedSize(10) }) }),
      mk({ objects: [new Proxy([pack.toString(), 4096, sealedSize(10)], {})] })
    ]
    const v0 = CID.createV0(await sha256.digest(new TextEncoder().encode('x')))
    candidates.push(mk({ objects: [[v0.toString(), 4096, sealedSize(10)]] }))
    const pool: unknown[] = [undefined, null, 0, -0, 1, -1, 10, 0.5, 1e21, 2 ** 50, 2 ** 50 + 1, 2 ** 51, 2 ** 51 + 1, 2 ** 53, Number.NaN, Infinity, '', '10', 'none', 'aes-256-gcm/1', '0123456789abcdef', 'c2FsdA==', 'a'.repeat(64), 'a'.repeat(65),
      file.toString(), pack.toString(), file.toString(base36), file.toString(base58btc), v0.toString(), v0.toString().toLowerCase(), 'b' + file.toString().slice(1).toUpperCase(), [], {}, [[pack.toString(), 0, 10]], [[file.toString(), 0, 10]], [pack.toString(), 0, 10], true, sealedSize(10)]
    const fields = ['cid', 'size', 'sealing', 'keyId', 'keySalt', 'objects']
    let seed = 7
    const rnd = (n: number): number => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n }
    for (let i = 0; i < 20000; i++) {
      const base: Record<string, unknown> = rnd(2) === 0 ? { ...good } : { cid: file.toString(), size: 10, sealing: 'none', keyId: '', keySalt: '', objects: [[file.toString(), 0, 10]] }
      for (let k = rnd(3) + 1; k > 0; k--) {
        const f = fields[rnd(fields.length)]!
        if (f === 'objects' && rnd(2) === 0) base.objects = [[pool[rnd(pool.length)], pool[rnd(pool.length)], pool[rnd(pool.length)]]]
        else base[f] = pool[rnd(pool.length)]
      }
      candidates.push(base)
    }
    const found: string[] = []
    for (const value of candidates) {
      if (accepted(value) && !recordSchema.safeParse(value).success) {
        found.push(Object.prototype.toString.call(value) + ' ' + JSON.stringify(value))
      }
    }
    expect(found).toStrictEqual([])
  })
})
