import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { fetchBytes } from '../helpers/trustless.js'
import { fileIn, serviceHolding, unixfsTree } from '../helpers/unixfs-tree.js'

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13])

describe('the gateway\'s Content-Type of files', () => {
  it('types a file by its name first, then by its magic bytes, then as UTF-8 text, else as bytes; always nosniff', async () => {
    const tree = await unixfsTree({
      'page.html': Buffer.from('<p>hi</p>'),
      'image.png': PNG,
      'noext-png': PNG,
      'noext-pdf': Buffer.from('%PDF-1.4\n...'),
      'noext-gzip': Buffer.from([0x1f, 0x8b, 0x08, 0, 0, 0]),
      'noext-text': Buffer.from('plain words, ünïcode too\n'),
      'noext-html': Buffer.from('<html><script>alert(1)</script></html>'),
      'noext-binary': Buffer.concat([Buffer.from([0, 1, 2, 3]), randomBytes(100)]),
      'data.json': Buffer.from('{}'),
      'empty': Buffer.alloc(0)
    })
    const { url } = await serviceHolding(tree)
    const root = tree.root.toString()
    const typeOf = async (path: string): Promise<string | undefined> => {
      const answer = await fetchBytes(url, path)
      expect(answer.headers['x-content-type-options'], path).toBe('nosniff')
      return answer.headers['content-type'] as string | undefined
    }
    expect(await typeOf(`/ipfs/${root}/page.html`)).toBe('text/html; charset=utf-8')
    expect(await typeOf(`/ipfs/${root}/image.png`)).toBe('image/png')
    expect(await typeOf(`/ipfs/${root}/noext-png`)).toBe('image/png')
    expect(await typeOf(`/ipfs/${root}/noext-pdf`)).toBe('application/pdf')
    expect(await typeOf(`/ipfs/${root}/noext-gzip`)).toBe('application/gzip')
    expect(await typeOf(`/ipfs/${root}/noext-text`)).toBe('text/plain; charset=utf-8')
    // Never HTML from the bytes alone: only a name makes a page.
    expect(await typeOf(`/ipfs/${root}/noext-html`)).toBe('text/plain; charset=utf-8')
    expect(await typeOf(`/ipfs/${root}/noext-binary`)).toBe('application/octet-stream')
    expect(await typeOf(`/ipfs/${root}/data.json`)).toBe('application/json')
    // A bare CID has no name: its bytes decide, and ?filename= names it.
    const png = fileIn(tree, 'image.png').cid.toString()
    expect(await typeOf(`/ipfs/${png}`)).toBe('image/png')
    expect(await typeOf(`/ipfs/${fileIn(tree, 'noext-text').cid.toString()}?filename=x.css`)).toBe('text/css; charset=utf-8')
    // A range past the first bytes is typed by the file's start, read for it.
    for (const range of ['bytes=8-', 'bytes=0-0']) {
      const ranged = await fetchBytes(url, `/ipfs/${png}`, { headers: { range } })
      expect(ranged, range).toMatchObject({ status: 206, headers: { 'content-type': 'image/png' } })
    }
  })
})
