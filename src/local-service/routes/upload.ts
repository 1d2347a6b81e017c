import { randomUUID } from 'node:crypto'
import { Busboy } from '@fastify/busboy'
import { CidBuilder, type CidProfile } from '../../content/index.js'
import { HttpFailure, sendJson, type Route } from '../http.js'
import type { ServiceParts } from '../parts.js'

const KUBO_DEFAULT_CHUNK = 262_144
const KUBO_DEFAULT_LINKS = 174
const MAX_CHUNK = 1024 * 1024

function flag (url: URL, name: string): boolean | undefined {
  const value = url.searchParams.get(name)
  if (value === null) return undefined
  if (value === 'true' || value === '1' || value === '') return true
  if (value === 'false' || value === '0') return false
  throw new HttpFailure(400, `${name} must be true or false`)
}

/** Kubo's `add` parameters as an import profile; Kubo's own defaults where one is absent. */
export function profileFromQuery (url: URL): CidProfile {
  const version = url.searchParams.get('cid-version') ?? '0'
  if (version !== '0' && version !== '1') throw new HttpFailure(400, 'cid-version must be 0 or 1')
  const chunker = url.searchParams.get('chunker') ?? `size-${KUBO_DEFAULT_CHUNK}`
  const size = /^size-(\d+)$/.exec(chunker)
  if (size === null || Number(size[1]) < 1 || Number(size[1]) > MAX_CHUNK) throw new HttpFailure(400, `unsupported chunker ${chunker.slice(0, 40)}: use size-N, N up to ${MAX_CHUNK}`)
  const links = Number(url.searchParams.get('max-file-links') ?? KUBO_DEFAULT_LINKS)
  if (!Number.isInteger(links) || links < 2 || links > 4096) throw new HttpFailure(400, 'max-file-links must be from 2 to 4096')
  const cidVersion = version === '1' ? 1 : 0
  const rawLeaves = flag(url, 'raw-leaves') ?? cidVersion === 1
  if (cidVersion === 0 && rawLeaves) throw new HttpFailure(400, 'raw-leaves needs cid-version=1')
  if (flag(url, 'wrap-with-directory') === true) throw new HttpFailure(400, 'wrap-with-directory is not supported: send wrap-with-directory=false')
  // The name is only a label; the builder reads the parameters.
  return { name: 'kubo-cidv1', cidVersion, chunkSize: Number(size[1]), maxLinks: links, rawLeaves }
}

/**
 * Kubo's `/api/v0/add`: one multipart field `file`, imported with the requested parameters while
 * it streams in (never held whole), its blocks stored, the file listed for the caller.
 */
export function uploadRoutes (parts: ServiceParts): Route[] {
  const insert = parts.db.prepare(`INSERT INTO files (id, address, cid, file_name, mime_type, size, created_at, last_update)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
  return [{
    name: 'upload',
    methods: ['POST'],
    path: '/api/v0/add',
    auth: 'api-key',
    handle: async ({ req, res, url, caller }) => {
      const profile = profileFromQuery(url)
      const contentType = req.headers['content-type'] ?? ''
      if (!contentType.startsWith('multipart/form-data')) throw new HttpFailure(400, 'expected a multipart/form-data body with a field named file')
      const added = await new Promise<{ cid: string, size: number, dagSize: number, name: string, mime: string }>((resolve, reject) => {
        const busboy = new Busboy({ headers: req.headers as { 'content-type': string }, limits: { files: 1 } })
        let seen = false
        busboy.on('file', (field, stream, filename, _encoding, mime) => {
          if (field !== 'file' || seen) { stream.resume(); return }
          seen = true
          const builder = new CidBuilder(profile, { onBlock: (cid, block) => parts.blocks.put(cid, block) })
          stream.on('data', (chunk: Buffer) => builder.update(chunk))
          stream.on('error', reject)
          stream.on('end', () => {
            const root = builder.finishLink()
            resolve({ cid: root.cid.toString(), size: root.fileSize, dagSize: root.treeSize, name: filename ?? root.cid.toString(), mime: mime ?? 'application/octet-stream' })
          })
        })
        busboy.on('error', (err: Error) => reject(new HttpFailure(400, `bad multipart body: ${err.message}`)))
        busboy.on('finish', () => { if (!seen) reject(new HttpFailure(400, 'no field named file in the body')) })
        req.pipe(busboy)
      })
      const now = Date.now()
      insert.run(randomUUID(), caller.address, added.cid, added.name, added.mime, added.size, now, now)
      sendJson(res, 200, { Name: added.name, Hash: added.cid, Size: String(added.dagSize) })
    }
  }]
}
