import type { IncomingMessage, ServerResponse } from 'node:http'
import { Busboy } from '@fastify/busboy'
import type { CID } from 'multiformats/cid'
import { CidBuilder } from '../../content/index.js'
import { HttpFailure, sendJson, type Route } from '../http.js'
import type { ServiceParts } from '../parts.js'
import { putUnder, uploadCommitter, type Added, type Allowance } from '../upload-commit.js'
import { partPath } from './add-path.js'
import { addRequest, type AddRequest } from './add-query.js'
import { AddTree, DIRECTORY_TYPE, PROGRESS_STEP, type AddLine } from './add-tree.js'

const MAX_PARTS = 1000

/** Stores a block the request made, unless it only hashes (then nothing is stored). */
type Keep = ((cid: CID, block: Uint8Array) => void) | undefined

/** Reads one file part into the tree as it streams in: its blocks kept, its bytes counted, its progress told. */
function importFile (request: AddRequest, tree: AddTree, keep: Keep, allowance: Allowance | undefined, stream: NodeJS.ReadableStream, path: string[], mime: string, fail: (err: unknown) => void): Promise<void> {
  const slot = tree.file(path, mime)
  const builder = new CidBuilder(request.profile, { onBlock: keep })
  let refused = false
  let reported = 0
  return new Promise<void>((resolve, reject) => {
    // A failure here (past the quota, a store that cannot write, a name taken) refuses the whole
    // request at once: the rest of the part is drained unread.
    const refuse = (failure: unknown): void => {
      refused = true
      stream.resume()
      reject(failure)
      fail(failure)
    }
    stream.on('data', (chunk: Buffer) => {
      if (refused) return
      try {
        // Counted with the account's other requests under way, as it arrives.
        allowance?.quota.take(chunk.byteLength)
        builder.update(chunk)
      } catch (failure) {
        refuse(failure)
        return
      }
      if (request.progress && builder.size - reported >= PROGRESS_STEP) {
        reported = builder.size
        slot.progress(reported, false)
      }
    })
    stream.on('error', reject)
    stream.on('end', () => {
      if (refused) return
      try {
        if (request.progress) slot.progress(builder.size, true)
        slot.done(builder.finishLink())
      } catch (failure) {
        refuse(failure)
        return
      }
      resolve()
    })
  })
}

/**
 * Imports every part of a multipart body as it streams in, in order, into `tree`. Any part name
 * is taken, as Kubo takes it (`file`, `file-1`, `dir-2`...); a part's type says what it is.
 */
async function importParts (req: IncomingMessage, request: AddRequest, tree: AddTree, keep: Keep, allowance: Allowance | undefined): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const busboy = new Busboy({ headers: req.headers as { 'content-type': string }, limits: { files: MAX_PARTS }, preservePath: true })
    const added: Array<Promise<void>> = []
    let failed = false
    const fail = (err: unknown): void => {
      if (failed) return
      failed = true
      req.unpipe(busboy)
      req.resume()
      reject(err)
    }
    busboy.on('file', (_field, stream, filename, _encoding, mime) => {
      if (failed) { stream.resume(); return }
      try {
        const path = partPath(filename)
        if (mime === DIRECTORY_TYPE) { stream.resume(); tree.directory(path); return }
        if (mime === 'application/symlink') throw new HttpFailure(400, 'symlinks are not implemented by this service: send the file they point to')
        const part = importFile(request, tree, keep, allowance, stream, path, mime ?? 'application/octet-stream', fail)
        // A part refused while the whole request fails at once: its rejection is that failure, owned here.
        part.catch(() => {})
        added.push(part)
      } catch (err) {
        stream.resume()
        fail(err)
      }
    })
    busboy.on('field', (field: string) => fail(new HttpFailure(400, `unexpected form field ${field.slice(0, 40)}: send each file in a part with a filename`)))
    busboy.on('filesLimit', () => fail(new HttpFailure(400, `more than ${MAX_PARTS} parts in one request`)))
    busboy.on('error', (err: Error) => fail(new HttpFailure(400, `bad multipart body: ${err.message}`)))
    busboy.on('finish', () => {
      Promise.all(added).then(() => { if (!failed) resolve() }, fail)
    })
    req.pipe(busboy)
  })
}

/**
 * Kubo's answer: one object for one line, else NDJSON, a line each. A client that asked for no
 * stream of lines and made one root (the storage service's SDK, uploading a folder) gets that
 * root's line alone: it is the last, as each root comes after what it holds.
 */
function answer (res: ServerResponse, request: AddRequest, lines: readonly AddLine[], roots: number): void {
  if (lines.length === 1 || (!request.lines && !request.progress && roots === 1)) { sendJson(res, 200, lines[lines.length - 1]); return }
  const text = lines.map(a => JSON.stringify(a)).join('\n') + '\n'
  res.writeHead(200, { 'content-type': 'application/json', 'x-chunked-output': '1', 'content-length': Buffer.byteLength(text) })
  res.end(text)
}

/**
 * Kubo's `/api/v0/add`: every part of a multipart body imported with the requested parameters
 * while it streams in (never held whole), its blocks stored, and the directories its paths name
 * made as Kubo makes them. Answered once all is durable, in Kubo's lines and order; each thing
 * Kubo would pin (a top-level file or directory, or the wrapping one) is listed for the account.
 */
export function uploadRoutes (parts: ServiceParts): Route[] {
  const commit = uploadCommitter(parts)
  return [{
    name: 'upload',
    methods: ['POST'],
    path: '/api/v0/add',
    auth: 'api-key',
    handle: async ({ req, res, url, caller }) => {
      const request = addRequest(url)
      const contentType = req.headers['content-type'] ?? ''
      if (!contentType.startsWith('multipart/form-data')) throw new HttpFailure(400, 'expected a multipart/form-data body with a part for each file')
      const tree = new AddTree(request.wrap)
      if (request.onlyHash) {
        // Nothing stored: no quota held, nothing to make durable, nothing listed.
        await importParts(req, request, tree, undefined, undefined)
        const done = tree.finish(request.profile, () => {})
        answer(res, request, done.lines, done.roots.length)
        return
      }
      let lines: AddLine[] = []
      let roots = 0
      await commit(caller.address, async (allowance): Promise<Added[]> => {
        const keep = (cid: CID, block: Uint8Array): void => { putUnder(parts, allowance, cid, block) }
        await importParts(req, request, tree, keep, allowance)
        const done = tree.finish(request.profile, keep)
        lines = done.lines
        roots = done.roots.length
        return done.roots.map(root => ({ cid: root.link.cid.toString(), size: root.link.fileSize, dagSize: root.link.treeSize, name: root.name, mime: root.mime }))
      })
      answer(res, request, lines, roots)
    }
  }]
}
