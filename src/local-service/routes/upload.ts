import type { IncomingMessage } from 'node:http'
import { Busboy } from '@fastify/busboy'
import { CidBuilder, type CidProfile } from '../../content/index.js'
import { HttpFailure, sendJson, type Route } from '../http.js'
import type { ServiceParts } from '../parts.js'
import { putUnder, uploadCommitter, type Added, type Allowance } from '../upload-commit.js'
import { segmentsOf, uploadRoots } from '../upload-tree.js'

const KUBO_DEFAULT_CHUNK = 262_144
const KUBO_DEFAULT_LINKS = 174
const MAX_CHUNK = 1024 * 1024

const MAX_PARTS = 1000

function flag (url: URL, name: string): boolean | undefined {
  const value = url.searchParams.get(name)
  if (value === null) return undefined
  if (value === 'true' || value === '1' || value === '') return true
  if (value === 'false' || value === '0') return false
  throw new HttpFailure(400, `${name} must be true or false`)
}

/** Kubo `add` parameters read into the profile below. */
const IMPORT_PARAMETERS = new Set(['cid-version', 'raw-leaves', 'chunker', 'max-file-links'])
/** Kubo parameters implemented at one value only (Kubo's default): a flag that must be false... */
const FALSE_ONLY = new Set(['wrap-with-directory', 'trickle', 'only-hash', 'inline', 'nocopy', 'fscache', 'progress', 'quiet', 'quieter', 'silent', 'preserve-mode', 'preserve-mtime'])
/** ...or a value that must be this. */
const FIXED: Readonly<Record<string, readonly string[]>> = { hash: ['sha2-256'], pin: ['true', ''], 'stream-channels': ['true', 'false', ''], encoding: ['json'] }

/**
 * Refuses, naming it, any parameter this service would otherwise ignore: a client that asked for
 * `hash=blake2b-256` or `trickle=true` must not get a CID made some other way without being told.
 */
function refuseUnimplemented (url: URL): void {
  for (const [name, value] of url.searchParams) {
    if (IMPORT_PARAMETERS.has(name)) continue
    if (FALSE_ONLY.has(name)) {
      if (flag(url, name) === true) throw new HttpFailure(400, `${name}=${value.slice(0, 40)} is not implemented by this service: leave it out or send ${name}=false`)
      continue
    }
    const allowed = FIXED[name]
    if (allowed === undefined) throw new HttpFailure(400, `parameter ${name.slice(0, 40)} is not implemented by this service`)
    if (!allowed.includes(value)) throw new HttpFailure(400, `${name}=${value.slice(0, 40)} is not implemented by this service: only ${name}=${allowed[0] as string}`)
  }
}

/** Kubo's `add` parameters as an import profile; Kubo's own defaults where one is absent. */
export function profileFromQuery (url: URL): CidProfile {
  refuseUnimplemented(url)
  const version = url.searchParams.get('cid-version') ?? '0'
  if (version !== '0' && version !== '1') throw new HttpFailure(400, 'cid-version must be 0 or 1')
  const chunker = url.searchParams.get('chunker') ?? `size-${KUBO_DEFAULT_CHUNK}`
  const size = /^size-(\d+)$/.exec(chunker)
  if (size === null || Number(size[1]) < 1 || Number(size[1]) > MAX_CHUNK) throw new HttpFailure(400, `chunker=${chunker.slice(0, 40)} is not implemented by this service: use size-N, N up to ${MAX_CHUNK}`)
  const links = Number(url.searchParams.get('max-file-links') ?? KUBO_DEFAULT_LINKS)
  if (!Number.isInteger(links) || links < 2 || links > 4096) throw new HttpFailure(400, 'max-file-links must be from 2 to 4096')
  const cidVersion = version === '1' ? 1 : 0
  const rawLeaves = flag(url, 'raw-leaves') ?? cidVersion === 1
  if (cidVersion === 0 && rawLeaves) throw new HttpFailure(400, 'raw-leaves=true with cid-version=0 is not implemented by this service: send cid-version=1, or raw-leaves=false')
  // The name is only a label; the builder reads the parameters.
  return { name: 'kubo-cidv1', cidVersion, chunkSize: Number(size[1]), maxLinks: links, rawLeaves }
}

/** Imports every `file` part of a multipart body as it streams in, in order. */
async function importParts (parts: ServiceParts, req: IncomingMessage, profile: CidProfile, allowance: Allowance): Promise<Added[]> {
  let refused = false
  return await new Promise<Added[]>((resolve, reject) => {
    // Paths kept: a folder comes as `folder/sub/a.txt`, one part a file.
    const busboy = new Busboy({ headers: req.headers as { 'content-type': string }, limits: { files: MAX_PARTS }, preservePath: true })
    const added: Array<Promise<Added>> = []
    const fail = (err: unknown): void => { req.unpipe(busboy); req.resume(); reject(err) }
    busboy.on('file', (field, stream, filename, _encoding, mime) => {
      if (field !== 'file') { stream.resume(); fail(new HttpFailure(400, `unexpected multipart field ${field.slice(0, 40)}: send each file in a field named file`)); return }
      if (mime === 'application/x-directory') { stream.resume(); fail(new HttpFailure(400, 'directories are not implemented by this service: send files')); return }
      // A name that cannot be a path is refused before its bytes are stored.
      try { segmentsOf(filename ?? '') } catch (failure) { stream.resume(); fail(failure); return }
      const builder = new CidBuilder(profile, { onBlock: (cid, block) => { putUnder(parts, allowance, cid, block) } })
      const part = new Promise<Added>((resolvePart, rejectPart) => {
        stream.on('data', (chunk: Buffer) => {
          if (refused) return
          try {
            // Counted with the account's other requests under way, as it arrives.
            allowance.quota.take(chunk.byteLength)
          } catch (failure) {
            // Past the quota: the rest is drained unread, and the whole request refused at once.
            refused = true
            stream.resume()
            rejectPart(failure)
            fail(failure)
            return
          }
          builder.update(chunk)
        })
        stream.on('error', rejectPart)
        stream.on('end', () => {
          if (refused) return
          const root = builder.finishLink()
          resolvePart({ cid: root.cid.toString(), size: root.fileSize, dagSize: root.treeSize, name: filename ?? root.cid.toString(), mime: mime ?? 'application/octet-stream' })
        })
      })
      // A part refused while the whole request fails at once: its rejection is that failure, owned here.
      part.catch(() => {})
      added.push(part)
    })
    busboy.on('field', (field: string) => fail(new HttpFailure(400, `unexpected form field ${field.slice(0, 40)}: send each file in a field named file, with a filename`)))
    busboy.on('filesLimit', () => fail(new HttpFailure(400, `more than ${MAX_PARTS} files in one request`)))
    busboy.on('error', (err: Error) => fail(new HttpFailure(400, `bad multipart body: ${err.message}`)))
    busboy.on('finish', () => {
      if (added.length === 0) { reject(new HttpFailure(400, 'no field named file in the body')); return }
      Promise.all(added).then(resolve, reject)
    })
    req.pipe(busboy)
  })
}

/**
 * Kubo's `/api/v0/add`: every multipart part named `file` imported with the requested parameters
 * while it streams in (never held whole), its blocks stored. Parts named by paths make their
 * directories. Each root (a top-level directory, or a file) is listed for the caller. One root is
 * answered with one object, as production does (its SDK parses a folder's answer so); several
 * with one line each, as Kubo does.
 */
export function uploadRoutes (parts: ServiceParts): Route[] {
  const commit = uploadCommitter(parts)
  return [{
    name: 'upload',
    methods: ['POST'],
    path: '/api/v0/add',
    auth: 'api-key',
    handle: async ({ req, res, url, caller }) => {
      const profile = profileFromQuery(url)
      const contentType = req.headers['content-type'] ?? ''
      if (!contentType.startsWith('multipart/form-data')) throw new HttpFailure(400, 'expected a multipart/form-data body with a field named file')
      const added = await commit(caller.address, async (allowance) => {
        const files = await importParts(parts, req, profile, allowance)
        return uploadRoots(files, profile, (cid, block) => { putUnder(parts, allowance, cid, block) })
      })
      const answers = added.map(file => ({ Name: file.name, Hash: file.cid, Size: String(file.dagSize) }))
      if (answers.length === 1) { sendJson(res, 200, answers[0]); return }
      // Several files: one line each, as Kubo streams them.
      const text = answers.map(a => JSON.stringify(a)).join('\n') + '\n'
      res.writeHead(200, { 'content-type': 'application/json', 'x-chunked-output': '1', 'content-length': Buffer.byteLength(text) })
      res.end(text)
    }
  }]
}
