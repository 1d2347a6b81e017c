import { describe, expect, it } from 'vitest'
import { fetchBytes } from '../helpers/trustless.js'
import { serviceHolding, unixfsTree } from '../helpers/unixfs-tree.js'

describe('the gateway\'s directories', () => {
  it('redirects a directory without its trailing slash (301, query kept), then lists it as HTML from its links', async () => {
    const tree = await unixfsTree({ 'docs/a.txt': Buffer.from('a'), 'docs/<b>&"c".txt': Buffer.from('bc'), 'docs/sub/d.txt': Buffer.from('d') })
    const { url } = await serviceHolding(tree)
    const root = tree.root.toString()
    for (const [path, location] of [[`/ipfs/${root}`, `/ipfs/${root}/`], [`/ipfs/${root}/docs?x=1`, `/ipfs/${root}/docs/?x=1`], [`/ipfs/${root}/docs/sub`, `/ipfs/${root}/docs/sub/`]]) {
      const moved = await fetchBytes(url, path as string)
      expect(moved, path).toMatchObject({ status: 301, headers: { location } })
    }
    const listing = await fetchBytes(url, `/ipfs/${root}/docs/`)
    expect(listing).toMatchObject({ status: 200, complete: true, headers: { 'content-type': 'text/html; charset=utf-8', 'x-content-type-options': 'nosniff' } })
    expect(listing.headers.etag).toMatch(/^"DirIndex-.+_CID-bafy/)
    // A page on the service's own origin runs sandboxed: an origin of its own, so the service's API refuses it.
    expect(listing.headers['content-security-policy']).toMatch(/^sandbox\b/)
    expect(listing.headers['content-security-policy']).not.toContain('allow-same-origin')
    expect((await fetchBytes(url, '/api/user/files_uploaded', { headers: { origin: 'null' } })).status).toBe(403)
    const html = listing.body.toString()
    expect(html).toContain('href="./a.txt"')
    expect(html).toContain('href="./sub"')
    expect(html).toContain('href="../"')
    // Names are escaped in the page and encoded in links: no markup from a name.
    expect(html).toContain('&#60;b&#62;&#38;&#34;c&#34;.txt')
    expect(html).toContain(`href="./${encodeURIComponent('<b>&"c".txt').replace(/&/g, '&#38;')}"`)
    expect(html).not.toContain('<b>')
    // The format a client asks for still wins: a CAR or the block, never a redirect.
    expect((await fetchBytes(url, `/ipfs/${root}/docs?format=car`)).status).toBe(200)
    expect((await fetchBytes(url, `/ipfs/${root}?format=raw`)).status).toBe(200)
    const head = await fetchBytes(url, `/ipfs/${root}/docs/`, { method: 'HEAD' })
    expect(head).toMatchObject({ status: 200, body: Buffer.alloc(0), headers: { 'content-length': String(listing.body.byteLength) } })
    expect((await fetchBytes(url, `/ipfs/${root}/docs/`, { headers: { 'if-none-match': listing.headers.etag as string } })).status).toBe(304)
  })

  it('serves index.html where a directory has one, and lists a HAMT-sharded directory through its shards', async () => {
    const files: Record<string, Uint8Array> = { 'site/index.html': Buffer.from('<h1>home</h1>'), 'site/style.css': Buffer.from('h1{}') }
    for (let i = 0; i < 300; i++) files[`many/f${i}.txt`] = Buffer.from(`file ${i}`)
    const tree = await unixfsTree(files, { shardSplitThresholdBytes: 256 })
    const { url } = await serviceHolding(tree)
    const root = tree.root.toString()
    const site = await fetchBytes(url, `/ipfs/${root}/site/`)
    expect(site).toMatchObject({ status: 200, body: Buffer.from('<h1>home</h1>'), headers: { 'content-type': 'text/html; charset=utf-8' } })
    expect(site.headers['content-security-policy']).toMatch(/^sandbox\b/)
    expect((await fetchBytes(url, `/ipfs/${root}/site`)).status).toBe(301)
    const many = await fetchBytes(url, `/ipfs/${root}/many/`)
    expect(many.status).toBe(200)
    const names = [...many.body.toString().matchAll(/href="\.\/(f\d+\.txt)"/g)].map(m => m[1])
    expect(new Set(names).size).toBe(300)
    // A Service-Worker may not claim the whole of a CID's path.
    expect((await fetchBytes(url, `/ipfs/${root}`, { headers: { 'service-worker': 'script' } })).status).toBe(400)
  })
})
