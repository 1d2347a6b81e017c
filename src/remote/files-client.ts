import { RemoteListingError, RemoteNotFoundError } from '../errors.js'
import { z } from 'zod'
import type { HttpClient } from './http-client.js'
import { ANSWER_LIMITS } from './body.js'

/** A delete's answer is not relied on beyond its status; any JSON object will do. */
const deleteAnswerSchema = z.object({}).passthrough()
import { filesPageSchema, type FileRecord } from './schemas.js'
import type { CallOptions } from './deals-client.js'

export interface ListFilesOptions extends CallOptions {
  /** Told after each page: records so far and the total the service claims. */
  readonly onProgress?: (progress: { records: number, totalFiles: number, pages: number, malformed: number }) => void
}

/**
 * Every record of the uploads listing, newest first, one page at a time (memory stays at one
 * page). The page size is never assumed: it stops at an empty page or when the records reach
 * `totalFiles`. A page of records already read (a service that ignores `lastKey`) short of
 * `totalFiles` is a {@link RemoteListingError}: a partial listing must not pass for a whole one.
 * A record whose `cid` is not a canonical CID is skipped and counted (`malformed`).
 */
export async function * listFiles (api: HttpClient, options: ListFilesOptions = {}): AsyncGenerator<FileRecord> {
  let lastKey: string | undefined
  let records = 0
  let pages = 0
  let malformed = 0
  const seen = new Set<string>()
  for (;;) {
    const request = { method: 'GET', path: '/api/user/files_uploaded', query: { lastKey: lastKey ?? 'null', fileType: 'all' }, maxBytes: ANSWER_LIMITS.listing, signal: options.signal } as const
    const page = await api.json(request, filesPageSchema)
    pages++
    let fresh = 0
    for (const record of page.fileList) {
      if (seen.has(record.id)) continue
      seen.add(record.id)
      fresh++
      records++
      // Not a CID: nothing cidsync could match it with, and it must never reach a URL or a path.
      if (record.cid === '') { malformed++; continue }
      yield record
    }
    options.onProgress?.({ records, totalFiles: page.totalFiles, pages, malformed })
    const next = page.fileList.at(-1)?.id
    if (page.fileList.length === 0 || records >= page.totalFiles || next === undefined) return
    if (fresh === 0 || next === lastKey) {
      throw new RemoteListingError({ service: 'main API', method: 'GET', url: api.url(request).toString() }, records, page.totalFiles, lastKey ?? 'null')
    }
    lastKey = next
  }
}

/**
 * Takes an upload out of the account's listing by its id. The service may keep serving its
 * bytes until it reclaims space. A 404 (no such upload here) answers false.
 */
export async function deleteUpload (api: HttpClient, id: string, options: CallOptions = {}): Promise<boolean> {
  try {
    await api.json({ method: 'DELETE', path: '/api/user/delete_file', query: { id }, maxBytes: ANSWER_LIMITS.small, signal: options.signal }, deleteAnswerSchema)
    return true
  } catch (err) {
    if (err instanceof RemoteNotFoundError) return false
    throw err
  }
}
