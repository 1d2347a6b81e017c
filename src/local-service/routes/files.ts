import { sendJson, type Route } from '../http.js'
import type { ServiceParts } from '../parts.js'

interface FileRow {
  seq: number, id: string, address: string, cid: string, file_name: string, mime_type: string, size: number,
  sent_for_deal: string, encryption: number, created_at: number, last_update: number
}

/** A listing record as production sends it: the size as a string, timestamps in ms. */
export function fileRecord (row: FileRow): Record<string, unknown> {
  return {
    id: row.id,
    cid: row.cid,
    fileName: row.file_name,
    mimeType: row.mime_type,
    fileSizeInBytes: String(row.size),
    publicKey: row.address,
    sentForDeal: row.sent_for_deal,
    encryption: row.encryption === 1,
    createdAt: row.created_at,
    lastUpdate: row.last_update
  }
}

/** The uploads listing: newest first, `pageSize` a page, `lastKey` the id of the last record seen. */
export function fileRoutes (parts: ServiceParts): Route[] {
  const firstPage = parts.db.prepare('SELECT * FROM files WHERE address = ? ORDER BY seq DESC LIMIT ?')
  const seqOf = parts.db.prepare('SELECT seq FROM files WHERE id = ? AND address = ?').pluck()
  const nextPage = parts.db.prepare('SELECT * FROM files WHERE address = ? AND seq < ? ORDER BY seq DESC LIMIT ?')
  const total = parts.db.prepare('SELECT COUNT(*) FROM files WHERE address = ?').pluck()
  return [{
    name: 'files_uploaded',
    methods: ['GET'],
    path: '/api/user/files_uploaded',
    auth: 'api-key',
    handle: ({ url, res, caller }) => {
      const lastKey = url.searchParams.get('lastKey')
      let rows: FileRow[]
      if (lastKey === null || lastKey === '' || lastKey === 'null') {
        rows = firstPage.all(caller.address, parts.pageSize) as FileRow[]
      } else {
        // An id it does not know (a record deleted since) is a 200, as production answers it: here with no records.
        const seq = seqOf.get(lastKey, caller.address) as number | undefined
        rows = seq === undefined ? [] : nextPage.all(caller.address, seq, parts.pageSize) as FileRow[]
      }
      sendJson(res, 200, { fileList: rows.map(fileRecord), totalFiles: total.get(caller.address) as number })
    }
  }]
}
