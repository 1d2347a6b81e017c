import type { CID } from 'multiformats/cid'
import { HttpFailure, type Route } from '../http.js'
import { parseCid, type ServiceParts } from '../parts.js'
import { fileSize, type ReadBlock } from './gateway-car.js'
import { fileBytes } from './gateway-file.js'
import { directoryOf, MAX_PATH_SEGMENTS, readOn, resolvePath } from './gateway-path.js'
import { primed, writeBody } from './gateway-respond.js'

/** `cat` parameters this service reads, and those it takes and leaves to the client (Kubo's own options). */
const READ = new Set(['arg', 'offset', 'length'])
const TAKEN = new Set(['progress', 'timeout', 'stream-channels', 'encoding'])

/** A non-negative whole number from the query, or a 400 naming it. */
function count (url: URL, name: string): number | undefined {
  const text = url.searchParams.get(name)
  if (text === null) return undefined
  if (!/^\d{1,16}$/.test(text)) throw new HttpFailure(400, `${name} must be a whole number of bytes, 0 or more`)
  return Number(text)
}

/** `arg` as Kubo takes it: `<cid>[/path]` or `/ipfs/<cid>[/path]`. */
function target (url: URL): { root: CID, segments: string[] } {
  for (const name of url.searchParams.keys()) {
    if (!READ.has(name) && !TAKEN.has(name)) throw new HttpFailure(400, `parameter ${name.slice(0, 40)} is not implemented by this service`)
  }
  const args = url.searchParams.getAll('arg')
  if (args.length !== 1) throw new HttpFailure(400, args.length === 0 ? 'argument "ipfs-path" is required' : 'one arg at a time: this service cats one path a request')
  const path = (args[0] as string).replace(/^\/ipfs\//, '')
  const [cid, ...rest] = path.split('/')
  const segments = rest.filter(s => s !== '')
  if (segments.length > MAX_PATH_SEGMENTS) throw new HttpFailure(400, `the path has ${segments.length} segments: at most ${MAX_PATH_SEGMENTS} are followed`)
  return { root: parseCid(cid ?? ''), segments }
}

/**
 * Kubo's `/api/v0/cat`: a UnixFS file's bytes (from `offset`, at most `length` of them), read a
 * block at a time as the answer drains, bounded as the gateway's answers are.
 */
export function catRoutes (parts: ServiceParts): Route[] {
  const read: ReadBlock = async cid => cid.multihash.code === 0x00 ? cid.multihash.digest : await parts.blocks.get(cid)
  return [{
    name: 'cat',
    methods: ['POST'],
    path: '/api/v0/cat',
    auth: 'api-key',
    handle: async ({ res, url, fault }) => {
      const { root, segments } = target(url)
      const offset = count(url, 'offset') ?? 0
      const length = count(url, 'length')
      const label = `/ipfs/${root.toString()}`
      const rootBlock = await readOn(read, root, label)
      const end = segments.length === 0 ? { cid: root, block: rootBlock } : await resolvePath(read, root, rootBlock, segments, label)
      if (directoryOf(end.cid, end.block) !== undefined) throw new HttpFailure(400, 'this dag node is a directory')
      const size = fileSize(end.cid, end.block)
      if (size === undefined) throw new HttpFailure(400, `${end.cid.toString()} is not a UnixFS file`)
      if (size > parts.carLimits.maxBytes) throw new HttpFailure(413, `${end.cid.toString()} is a file of ${size} bytes, more than this service sends in one answer (${parts.carLimits.maxBytes}, [local_service] max_car_bytes)`)
      const from = Math.min(offset, size)
      const to = Math.min(size, length === undefined ? size : from + length)
      const headers = { 'content-type': 'text/plain', 'x-stream-output': '1', 'x-content-length': String(size), 'content-length': String(to - from) }
      if (to === from) { res.writeHead(200, headers); res.end(); return }
      // The first bytes are read before the head: a block missing there is a 404, not a cut answer.
      const { body } = await primed(fileBytes(read, parts.carLimits, end.cid, end.block, size, { from, to: to - 1 }), end.cid)
      res.writeHead(200, headers)
      await writeBody(res, body, fault)
    }
  }]
}
