import { createReadStream } from 'node:fs'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { pipeline } from 'node:stream/promises'
import { z } from 'zod'
import { CID } from 'multiformats/cid'
import type { DownloadedFile } from '../sync/index.js'
import type { DashboardRoutes } from './dashboard-routes.js'
import { refuseUnsigned } from './find-routes.js'

/** What `GET /download` asks for: `folder/path`, optionally a device's row and a past publish. */
export interface DownloadQuery {
  readonly path: string
  readonly device?: string
  readonly at?: Date
  /** A version by its content (as the timeline lists it): the file's bytes when it held this CID. */
  readonly cid?: string
}

/** Fetches and verifies the file (sync/restore/download-file.ts); throws with a `code` and `exitCode` when it cannot. */
export type DownloadFetcher = (query: DownloadQuery, signal: AbortSignal) => Promise<DownloadedFile>

/** At most this many downloads at once per daemon: each holds a file's worth of disk in the state dir. */
export const MAX_DOWNLOADS = 2
/** Larger files are refused (413): each is staged whole in the state dir before it is sent; `cidsync get` has no bound. */
export const MAX_DOWNLOAD_BYTES = 8 * 1024 ** 3
/** A download that has not been verified within this long is given up (a stalled gateway). */
export const DOWNLOAD_TIMEOUT_MS = 30 * 60_000
/** A client that takes none of the file for this long is dropped: the server lifts its idle timeout for requests under way, and a stalled reader would hold a slot (and the staged file) for {@link DOWNLOAD_TIMEOUT_MS}. */
export const DOWNLOAD_STALL_MS = 30_000

const schema = z.object({
  path: z.string().min(3).max(8192),
  device: z.string().min(1).max(128).optional(),
  at: z.string().max(64).refine(t => Number.isFinite(Date.parse(t)), 'not a time (RFC 3339)').optional(),
  cid: z.string().max(256).refine(c => { try { CID.parse(c); return true } catch { return false } }, 'not a CID').optional()
})

function sendJson (res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent || res.destroyed) return
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' })
  res.end(JSON.stringify(body) + '\n')
}

/** Control characters and the bidi marks, embeddings, overrides and isolates (U+202E shows `invoice-\u202Efdp.exe` as `invoice-exe.pdf`). */
const UNSHOWABLE = /[\p{Cc}\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/gu

/**
 * `Content-Disposition` for a name from disk (RFC 6266): an ASCII fallback with anything unsafe
 * replaced, and the name percent-encoded as `filename*` (RFC 5987), its control and bidi
 * characters neutralised in both (a browser decodes `filename*` and saves and shows what it says).
 */
export function attachmentHeader (name: string): string {
  const base = (name.split('/').pop() ?? 'download').replace(UNSHOWABLE, '_')
  const fallback = base.replace(/[^\x20-\x7e]|["\\%;]/g, '_').replace(/^[.\s]+/, '').slice(0, 200) || 'download'
  const encoded = encodeURIComponent(base).replace(/['()*]/g, c => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`
}

function statusFor (err: Error & { code?: unknown, exitCode?: number }): number {
  if (err.code === 'ERR_CONTENT_NOT_STORED' || err.code === 'ERR_PATH_NOT_FOUND' || err.code === 'ERR_NOTHING_AT_TIME') return 404
  if (err.code === 'ERR_NOT_READY') return 503
  if (err.code === 'ERR_DOWNLOAD_TOO_LARGE') return 413
  if (err.code === 'ERR_DOWNLOAD_NO_ROOM') return 507
  if (err.code === 'ERR_USAGE') return 400
  return 502
}

function advice (code: string): string {
  if (code === 'ERR_CONTENT_NOT_STORED') return 'its content is not stored: set `store = true` on its folder on the device that has it, let the daemon store it, and try again'
  if (code === 'ERR_CONTENT_INTEGRITY' || code === 'ERR_INTEGRITY') return 'the stored content did not match the file\'s CID (damaged or forged): nothing of it was sent; run `cidsync verify` and try again later'
  if (code === 'ERR_DOWNLOAD_TOO_LARGE' || code === 'ERR_DOWNLOAD_NO_ROOM') return 'bring it back with `cidsync get PATH --to DIR` instead'
  if (code === 'ERR_NOT_READY') return 'the daemon has not reached the service yet: try again in a moment'
  return 'see the daemon\'s log; try again'
}

/**
 * `GET /download?path=folder/path[&device=ID][&at=TIME][&cid=CID]`: the file's content fetched through the
 * service, verified against its CID, and only then sent as an attachment (octet-stream, nosniff).
 * Behind the same guards as /search. Answers whether it handled the request.
 */
export class DownloadRoute {
  private running = 0
  private readonly owned = new Set<Promise<void>>()

  /** `stallMs`: how long a client may take none of the file before it is dropped. */
  constructor (private readonly fetcher: DownloadFetcher | undefined, private readonly stallMs = DOWNLOAD_STALL_MS) {}

  handle (dashboard: DashboardRoutes, token: string, req: IncomingMessage, res: ServerResponse, url: URL): boolean {
    if (url.pathname !== '/download') return false
    if (req.method !== 'GET') {
      res.writeHead(405, { allow: 'GET', 'content-type': 'text/plain; charset=utf-8' })
      res.end(`method not allowed: ${req.method ?? ''} /download\n`)
      return true
    }
    if (refuseUnsigned(dashboard, token, req, res, '/download')) return true
    if (this.fetcher === undefined) { sendJson(res, 503, { error: 'downloads are not available in this daemon' }); return true }
    const parsed = schema.safeParse(Object.fromEntries(url.searchParams))
    if (!parsed.success) {
      sendJson(res, 400, { error: `bad query for /download: ${parsed.error.issues.map(i => `${i.path.join('.')}: ${i.message}`).join('; ')}` })
      return true
    }
    if (this.running >= MAX_DOWNLOADS) {
      res.setHeader('retry-after', '5')
      sendJson(res, 503, { error: `${MAX_DOWNLOADS} downloads are already running: try again when one is done`, code: 'ERR_BUSY' })
      return true
    }
    const q = parsed.data
    const task = this.serve({ path: q.path, device: q.device, at: q.at === undefined ? undefined : new Date(q.at), cid: q.cid === undefined ? undefined : CID.parse(q.cid).toString() }, res)
    this.owned.add(task)
    void task.finally(() => { this.owned.delete(task) })
    return true
  }

  /** Waits for the downloads under way (each ends: the server closing its sockets aborts them). */
  async settle (): Promise<void> {
    await Promise.allSettled([...this.owned])
  }

  private async serve (query: DownloadQuery, res: ServerResponse): Promise<void> {
    this.running++
    const gone = new AbortController()
    const onClose = (): void => { if (!res.writableFinished) gone.abort(new Error('the client went away')) }
    res.on('close', onClose)
    const signal = AbortSignal.any([gone.signal, AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS)])
    let file: DownloadedFile | undefined
    try {
      try {
        file = await (this.fetcher as DownloadFetcher)(query, signal)
      } catch (err) {
        const e = err as Error & { code?: unknown }
        const code = typeof e.code === 'string' ? e.code : 'ERR_CIDSYNC'
        sendJson(res, statusFor(e), { error: `${query.path}: ${e.message}`, code, advice: advice(code) })
        return
      }
      if (signal.aborted) return
      res.writeHead(200, {
        'content-type': 'application/octet-stream',
        'content-length': String(file.size),
        'content-disposition': attachmentHeader(query.path),
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff'
      })
      res.setTimeout(this.stallMs, () => { res.destroy() })
      await pipeline(createReadStream(file.path), res, { signal }).catch(() => { res.destroy() })
    } finally {
      res.off('close', onClose)
      this.running--
      await file?.remove()
    }
  }
}
