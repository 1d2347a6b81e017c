import { describe, expect, it } from 'vitest'
import { fetchBytes } from '../helpers/trustless.js'
import { fileIn, serviceHolding, unixfsTree } from '../helpers/unixfs-tree.js'

describe('the gateway\'s ?filename= and ?download=', () => {
  it('names a file inline with ?filename=, as an attachment with ?download=true, RFC 6266 / 8187 for names beyond ASCII', async () => {
    const tree = await unixfsTree({ 'report.pdf': Buffer.from('%PDF-1.7 not really'), 'notes.txt': Buffer.from('notes') })
    const { url } = await serviceHolding(tree)
    const root = tree.root.toString()
    const cid = fileIn(tree, 'notes.txt').cid.toString()
    const disposition = async (path: string): Promise<string | undefined> => (await fetchBytes(url, path)).headers['content-disposition'] as string | undefined
    expect(await disposition(`/ipfs/${cid}`)).toBeUndefined()
    expect(await disposition(`/ipfs/${cid}?filename=hello.txt`)).toBe('inline; filename="hello.txt"')
    expect(await disposition(`/ipfs/${cid}?filename=hello.txt&download=true`)).toBe('attachment; filename="hello.txt"')
    expect(await disposition(`/ipfs/${cid}?filename=hello.txt&download=false`)).toBe('inline; filename="hello.txt"')
    // The path gateway spec's own example: each character beyond ASCII as _, and the UTF-8 name percent-encoded.
    expect(await disposition(`/ipfs/${cid}?filename=${encodeURIComponent('testтест.pdf')}`))
      .toBe('inline; filename="test____.pdf"; filename*=UTF-8\'\'test%D1%82%D0%B5%D1%81%D1%82.pdf')
    // Quotes, backslashes and control characters never reach the header as themselves.
    expect(await disposition(`/ipfs/${cid}?filename=${encodeURIComponent('a"b\\c\r\nd (1).txt')}`))
      .toBe('inline; filename="a_b_c__d (1).txt"; filename*=UTF-8\'\'a%22b%5Cc__d%20%281%29.txt')
    // download=true alone names the file by the path's last segment.
    expect(await disposition(`/ipfs/${root}/report.pdf?download=true`)).toBe('attachment; filename="report.pdf"')
    expect(await disposition(`/ipfs/${cid}?download=true`)).toBe('attachment')
    // Raw blocks and CARs stay attachments, named by ?filename= when given.
    expect(await disposition(`/ipfs/${cid}?format=raw&filename=n.bin`)).toBe('attachment; filename="n.bin"')
    expect(await disposition(`/ipfs/${cid}?format=car`)).toBe(`attachment; filename="${cid}.car"`)
    expect((await fetchBytes(url, `/ipfs/${cid}?filename=${'x'.repeat(2000)}`)).status).toBe(400)
  })
})
