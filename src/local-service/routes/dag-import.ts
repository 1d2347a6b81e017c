import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { Readable } from 'node:stream'
import { Busboy } from '@fastify/busboy'
import { CarBlockIterator } from '@ipld/car/iterator'
import * as dagPb from '@ipld/dag-pb'
import { UnixFS } from 'ipfs-unixfs'
import type { CID } from 'multiformats/cid'
import { boundCarSections, CarV1Reader, checkBlock, ChunkSource, flatCidText } from '../../content/index.js'
import type { QuotaHold } from '../account-policy.js'
import { HttpFailure, type Route } from '../http.js'
import { chargeRoots } from './dag-charge.js'
import { insideGate } from '../upload-commit.js'
import { pinError } from './dag-complete.js'
import type { ServiceParts } from '../parts.js'

/** Kubo refuses blocks past 1 MiB by default; the widest of our profiles' blocks fit under this. */
export const MAX_CAR_BLOCK_BYTES = 2 * 1024 * 1024
/** Blocks one request may bring (64 GiB of 256 KiB leaves): what it remembers of each is bounded by it. */
export const MAX_CAR_BLOCKS = 250_000
const MAX_CAR_FILES = 16
/**
 * Links one request's blocks may carry in all: each is remembered until the request ends (to find
 * its DAG roots), about 100 bytes a link. A whole DAG has one link per block below its root;
 * without this bound a CAR of 2 MiB dag-pb nodes of ~50,000 made-up links each grew the service's
 * memory without end as it was sent.
 */
export const MAX_CAR_LINKS = 2 * MAX_CAR_BLOCKS

const RAW_CODE = 0x55
/** A request's CAR is copied into one buffer this much at a time (with room for a section: 3 MiB a request). */
const READ_BYTES = 1024 * 1024

/** `dag/import` parameters this service implements, each at the values listed (Kubo's defaults first). */
const PARAMETERS: Readonly<Record<string, readonly string[]>> = {
  'pin-roots': ['true', 'false', ''],
  stats: ['false', 'true', ''],
  silent: ['false'],
  'allow-big-block': ['false']
}

function refuseUnimplemented (url: URL): void {
  for (const [name, value] of url.searchParams) {
    // Kubo's deadline for the command: clients enforce their own.
    if (name === 'timeout' && value.length <= 40) continue
    const allowed = PARAMETERS[name]
    if (allowed === undefined) throw new HttpFailure(400, `parameter ${name.slice(0, 40)} is not implemented by this service`)
    if (!allowed.includes(value)) throw new HttpFailure(400, `${name}=${value.slice(0, 40)} is not implemented by this service: send ${name}=${allowed[0] as string}`)
  }
}

/** What one request brought: what it stored anew (removed if it fails), and each block's file size for listing its DAG roots. */
interface Imported {
  readonly made: CID[]
  /** Every block's CID text to the bytes of file under it (a UnixFS file's size; a raw block's length). */
  readonly sizes: Map<string, number>
  readonly linked: Set<string>
  /** The links of each dag-pb block, and the length of each block stored anew: what a root is charged. */
  readonly links: Map<string, string[]>
  readonly newSizes: Map<string, number>
  /** Under a quota only: the links are kept to charge each root (memory a request without one never needs). */
  readonly charging: boolean
  readonly roots: CID[]
  blocks: number
  /** Links of its dag-pb blocks so far, each counted (bounded by {@link MAX_CAR_LINKS}). */
  linkCount: number
  bytes: number
  newBytes: number
}

function fileSizeOf (cid: CID, bytes: Uint8Array, state: Imported): number {
  if (cid.code === RAW_CODE) return bytes.byteLength
  if (cid.code !== dagPb.code) return bytes.byteLength
  let node: dagPb.PBNode
  try {
    node = dagPb.decode(bytes)
  } catch (err) {
    throw new HttpFailure(400, `block ${cid.toString()} is not valid dag-pb: ${(err as Error).message.slice(0, 200)}`)
  }
  state.linkCount += node.Links.length
  if (state.linkCount > MAX_CAR_LINKS) throw new HttpFailure(413, `the request's blocks link to more than ${MAX_CAR_LINKS} blocks, more than the ${MAX_CAR_BLOCKS} one request may bring: send the CAR in smaller parts`)
  const links = node.Links.map(link => flatCidText(link.Hash))
  for (const link of links) state.linked.add(link)
  if (state.charging) state.links.set(flatCidText(cid), links)
  try {
    return node.Data === undefined ? bytes.byteLength : Number(UnixFS.unmarshal(node.Data).fileSize())
  } catch {
    return bytes.byteLength
  }
}

/** Each block of one CAR stream with its roots: a CARv1 through one buffer, a CARv2 through `@ipld/car`'s iterator. */
async function openCar (stream: Readable): Promise<{ roots: CID[], blocks: AsyncIterator<{ cid: CID, bytes: Uint8Array }> }> {
  const source = new ChunkSource(stream)
  try {
    const v1 = await CarV1Reader.open(source, { maxBlockBytes: MAX_CAR_BLOCK_BYTES, readBytes: READ_BYTES })
    if (v1 !== undefined) {
      source.forget()
      return { roots: v1.roots, blocks: v1.sections() }
    }
    // Framing read as it arrives: a section announcing more than a block may hold is refused at once.
    const reader = await CarBlockIterator.fromIterable(boundCarSections(source.replay(), MAX_CAR_BLOCK_BYTES))
    return { roots: await reader.getRoots(), blocks: reader[Symbol.asyncIterator]() }
  } catch (err) {
    throw new HttpFailure(400, `not a CAR file: ${(err as Error).message.slice(0, 200)}`)
  }
}

/**
 * Reads one CAR as it streams in: every block checked against its CID before it is stored. A
 * CARv1's blocks are views of the reader's one buffer, read over by the next: the store writes
 * each before the next is read, and nothing keeps one (the CIDs are the reader's own).
 */
async function importCar (parts: ServiceParts, stream: Readable, state: Imported, quota: QuotaHold): Promise<void> {
  const { roots, blocks } = await openCar(stream)
  state.roots.push(...roots)
  for (;;) {
    let next: IteratorResult<{ cid: CID, bytes: Uint8Array }>
    try {
      next = await blocks.next()
    } catch (err) {
      throw new HttpFailure(400, `bad CAR file after ${state.blocks} blocks: ${(err as Error).message.slice(0, 200)}`)
    }
    if (next.done === true) return
    const { cid, bytes } = next.value
    const text = flatCidText(cid)
    if (++state.blocks > MAX_CAR_BLOCKS) throw new HttpFailure(413, `more than ${MAX_CAR_BLOCKS} blocks in one request: send the CAR in smaller parts`)
    if (bytes.byteLength > MAX_CAR_BLOCK_BYTES) throw new HttpFailure(400, `block ${text} holds ${bytes.byteLength} bytes, more than the ${MAX_CAR_BLOCK_BYTES} this service takes`)
    const check = checkBlock(cid, bytes)
    if (check !== 'ok') {
      throw new HttpFailure(400, check === 'mismatch'
        ? `block ${text} does not match its CID (its bytes hash to something else): the CAR is damaged or forged; nothing of this import was kept`
        : `block ${text} uses a hash function this service does not check: nothing of this import was kept`)
    }
    state.bytes += bytes.byteLength
    const fresh = !parts.blocks.has(cid)
    if (fresh) {
      state.newBytes += bytes.byteLength
      // Past the quota (with the account's other requests under way): the whole request is refused, and what it stored goes with it.
      quota.take(bytes.byteLength)
      state.made.push(cid)
      state.newSizes.set(text, bytes.byteLength)
    }
    // Put even when stored (a no-op then): a block another running request wrote is kept should that one fail.
    parts.blocks.put(cid, bytes, state)
    if (!state.sizes.has(text)) state.sizes.set(text, fileSizeOf(cid, bytes, state))
  }
}

/** Every file part of the body, one after another, as they stream in. */
async function importParts (parts: ServiceParts, req: IncomingMessage, state: Imported, quota: QuotaHold): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const busboy = new Busboy({ headers: req.headers as { 'content-type': string }, limits: { files: MAX_CAR_FILES, fileSize: Infinity } })
    let files = 0
    let chain = Promise.resolve()
    let failed = false
    const fail = (err: unknown): void => {
      if (failed) return
      failed = true
      req.unpipe(busboy)
      req.resume()
      reject(err)
    }
    // Any part name is taken, as Kubo takes it: kubo-rpc-client names a second CAR `file-1`.
    busboy.on('file', (_field, stream) => {
      files++
      chain = chain.then(async () => { if (!failed) await importCar(parts, stream, state, quota) }).catch((err: unknown) => { stream.resume(); fail(err) })
    })
    busboy.on('field', (field: string) => fail(new HttpFailure(400, `unexpected form field ${field.slice(0, 40)}: send each CAR in a part with a filename`)))
    busboy.on('filesLimit', () => fail(new HttpFailure(400, `more than ${MAX_CAR_FILES} CAR files in one request`)))
    busboy.on('error', (err: Error) => fail(new HttpFailure(400, `bad multipart body: ${err.message}`)))
    busboy.on('finish', () => {
      void chain.then(() => {
        if (failed) return
        if (files === 0) fail(new HttpFailure(400, 'no CAR in the body: send each CAR in a part with a filename'))
        else resolve()
      })
    })
    req.pipe(busboy)
  })
}

/**
 * Kubo's `/api/v0/dag/import`: CAR files in multipart parts, read as they stream in.
 * Every block is checked against its CID; a block that does not match refuses the whole request
 * with a 400 naming it, and every block the request had stored is removed, as for one past the
 * account's quota (413). Each DAG root it brought (a block no other block links to) is listed as
 * an upload, so deals and the listing see the objects as if each had been added.
 */
export function dagImportRoutes (parts: ServiceParts): Route[] {
  const insert = parts.db.prepare(`INSERT INTO files (id, address, cid, file_name, mime_type, size, created_at, last_update)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
  const listed = parts.db.prepare('SELECT cid FROM files WHERE address = ? AND deleted_at IS NULL').pluck()
  // A root listed before whose blocks arrive only now (it came alone first) is charged for them.
  const grow = parts.db.prepare('UPDATE files SET size = MAX(size, ?) WHERE address = ? AND cid = ? AND deleted_at IS NULL')
  /** Reads the request's CARs, then makes their blocks durable and lists each DAG root; a failure keeps nothing it made. */
  const importAndList = async (state: Imported, req: IncomingMessage, address: string): Promise<void> => {
    const quota = parts.limits.hold(address)
    let counted = false
    try {
      try {
        await importParts(parts, req, state, quota)
      } catch (err) {
        for (const cid of state.made) parts.blocks.remove(cid)
        throw err
      }
      parts.blocks.settle(state.made)
      // Durable before it is listed or answered (blocks.ts, rule 3).
      parts.blocks.flush()
      const now = Date.now()
      const known = new Set(listed.all(address) as string[])
      const roots = [...state.sizes.keys()].filter(cid => !state.linked.has(cid))
      // Under a quota, a DAG is listed at no less than the bytes it stored, whatever size it claims.
      const charges = state.charging ? chargeRoots(roots, state.links, state.newSizes) : new Map<string, number>()
      parts.db.transaction(() => {
        for (const cid of roots) {
          const size = Math.max(state.sizes.get(cid) ?? 0, charges.get(cid) ?? 0)
          if (known.has(cid)) grow.run(size, address, cid)
          else insert.run(randomUUID(), address, cid, cid, 'application/octet-stream', size, now, now)
        }
      }).immediate()
      counted = true
    } finally {
      quota.release(counted)
    }
  }
  return [{
    name: 'dag_import',
    methods: ['POST'],
    path: '/api/v0/dag/import',
    auth: 'api-key',
    handle: async ({ req, res, url, caller }) => {
      refuseUnimplemented(url)
      const contentType = req.headers['content-type'] ?? ''
      if (!contentType.startsWith('multipart/form-data')) throw new HttpFailure(400, 'expected a multipart/form-data body with a part for each CAR')
      const state: Imported = { made: [], sizes: new Map(), linked: new Set(), links: new Map(), newSizes: new Map(), charging: parts.limits.limited, roots: [], blocks: 0, linkCount: 0, bytes: 0, newBytes: 0 }
      await insideGate(parts, async () => { await importAndList(state, req, caller.address) })
      // As Kubo: with `pin-roots=false` no root is pinned, and none is answered.
      const pinRoots = url.searchParams.get('pin-roots') !== 'false'
      const lines = []
      if (pinRoots) {
        for (const root of new Map(state.roots.map(r => [r.toString(), r])).values()) {
          lines.push({ Root: { Cid: { '/': root.toString() }, PinErrorMsg: await pinError(parts, root, MAX_CAR_LINKS) } })
        }
      }
      const stats = url.searchParams.get('stats')
      const answer = [...lines, ...(stats === 'true' || stats === '' ? [{ Stats: { BlockCount: state.blocks, BlockBytesCount: state.bytes } }] : [])]
      const text = answer.map(a => JSON.stringify(a)).join('\n') + '\n'
      res.writeHead(200, { 'content-type': 'application/json', 'x-chunked-output': '1', 'content-length': Buffer.byteLength(text) })
      res.end(text)
    }
  }]
}
