import type * as dagPb from '@ipld/dag-pb'
import type { UnixFS } from 'ipfs-unixfs'
import type { CID } from 'multiformats/cid'
import { HttpFailure } from '../http.js'
import type { ReadBlock } from './gateway-car.js'
import { directoryOf, readOn } from './gateway-path.js'

/** At most this many entries listed: the page stays small and quick; the CAR has them all. */
export const MAX_LISTED = 5_000

/** HAMT shards read for one listing, at most: a shard holds at least one entry, most many. */
const MAX_SHARDS = 10_000

/** Changes with the page's markup, so caches drop listings this code no longer makes. */
const LISTING_VERSION = 'cidsync-1'

export interface Entry { readonly name: string, readonly cid: CID, readonly dagSize: number }

/**
 * The directory's entries in link order (a HAMT's shards depth-first), from its blocks alone:
 * sizes are the links' DAG sizes, so no child is read. Stops at {@link MAX_LISTED}.
 */
export async function listEntries (read: ReadBlock, cid: CID, dir: { node: dagPb.PBNode, unixfs: UnixFS }, where: string): Promise<{ entries: Entry[], more: boolean }> {
  const entries: Entry[] = []
  let shards = 0
  const entry = (link: dagPb.PBLink, name: string): Entry => ({ name, cid: link.Hash, dagSize: link.Tsize ?? 0 })
  if (dir.unixfs.type === 'directory') {
    const links = dir.node.Links.slice(0, MAX_LISTED + 1)
    return { entries: links.slice(0, MAX_LISTED).map(link => entry(link, link.Name ?? '')), more: links.length > MAX_LISTED }
  }
  const pad = (node: { unixfs: UnixFS }): number => Math.max(1, (Number(node.unixfs.fanout ?? 256n) - 1).toString(16).length)
  async function walk (node: { node: dagPb.PBNode, unixfs: UnixFS }, depth: number): Promise<boolean> {
    const width = pad(node)
    for (const link of node.node.Links) {
      const name = link.Name ?? ''
      if (name.length > width) {
        if (entries.length >= MAX_LISTED) return true
        entries.push(entry(link, name.slice(width)))
        continue
      }
      // A name of just the prefix is a sub-shard: 64 hash bits make at most 64 levels.
      if (++shards > MAX_SHARDS || depth >= 64) return true
      const shard = directoryOf(link.Hash, await readOn(read, link.Hash, where))
      if (shard?.unixfs.type !== 'hamt-sharded-directory') throw new HttpFailure(502, `${where}: ${link.Hash.toString()} is not the HAMT shard its parent links it as`)
      if (await walk(shard, depth + 1)) return true
    }
    return false
  }
  const more = await walk(dir, 0)
  return { entries, more }
}

const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, c => `&#${c.charCodeAt(0)};`)

/** The tag of a generated listing: the directory's CID and the markup's version. */
export const listingEtag = (cid: CID): string => `"DirIndex-${LISTING_VERSION}_CID-${cid.toString()}"`

/** A plain HTML listing of the directory at `path` (which ends in `/`): names link relative to it. */
export function listingHtml (path: string, cid: CID, entries: readonly Entry[], more: boolean): string {
  const rows = entries.map(e => {
    const href = `./${encodeURIComponent(e.name)}`
    return `<tr><td><a href="${escapeHtml(href)}">${escapeHtml(e.name)}</a></td><td><a href="/ipfs/${e.cid.toString()}?filename=${escapeHtml(encodeURIComponent(e.name))}">${e.cid.toString()}</a></td><td>${e.dagSize}</td></tr>`
  })
  const parent = path.split('/').filter(s => s !== '').length > 2 ? '<tr><td><a href="../">..</a></td><td></td><td></td></tr>' : ''
  return [
    '<!DOCTYPE html>',
    `<html><head><meta charset="utf-8"><title>${escapeHtml(path)}</title></head><body>`,
    `<h1>Index of ${escapeHtml(path)}</h1>`,
    `<p>${cid.toString()} (<a href="?format=car">CAR</a>)</p>`,
    '<table><thead><tr><th>Name</th><th>CID</th><th>DAG size</th></tr></thead><tbody>',
    parent,
    ...rows,
    '</tbody></table>',
    more ? `<p>Only the first ${entries.length} entries are listed: the CAR (<a href="?format=car">?format=car</a>) holds them all.</p>` : '',
    '</body></html>',
    ''
  ].join('\n')
}
