import { HttpFailure, requireParam, sendJson, type Route } from '../http.js'
import { parseCid, type ServiceParts } from '../parts.js'

interface FileRow {
  seq: number, id: string, address: string, cid: string, file_name: string, mime_type: string, size: number,
  sent_for_deal: string, encryption: number, created_at: number, last_update: number
}

/** A listing record as production sends it: the size as a string, timestamps in ms, no type for a folder. */
export function fileRecord (row: FileRow): Record<string, unknown> {
  return {
    id: row.id,
    cid: row.cid,
    fileName: row.file_name,
    mimeType: row.mime_type === '' ? null : row.mime_type,
    fileSizeInBytes: String(row.size),
    publicKey: row.address,
    sentForDeal: row.sent_for_deal,
    encryption: row.encryption === 1,
    createdAt: row.created_at,
    lastUpdate: row.last_update
  }
}

/**
 * An account's uploads: the listing (newest first, `pageSize` a page, `lastKey` the id of the last
 * record seen), one upload's info by CID, removing one by id, and the bytes the account holds.
 */
export function fileRoutes (parts: ServiceParts): Route[] {
  const firstPage = parts.db.prepare('SELECT * FROM files WHERE address = ? AND deleted_at IS NULL ORDER BY seq DESC LIMIT ?')
  const seqOf = parts.db.prepare('SELECT seq FROM files WHERE id = ? AND address = ? AND deleted_at IS NULL').pluck()
  const nextPage = parts.db.prepare('SELECT * FROM files WHERE address = ? AND seq < ? AND deleted_at IS NULL ORDER BY seq DESC LIMIT ?')
  const total = parts.db.prepare('SELECT COUNT(*) FROM files WHERE address = ? AND deleted_at IS NULL').pluck()
  // The first upload of a CID, whoever made it: production answers anyone who knows the CID.
  const firstOfCid = parts.db.prepare('SELECT * FROM files WHERE cid = ? AND deleted_at IS NULL ORDER BY seq LIMIT 1')
  // Marked, not dropped: its bytes are held, and counted against the quota, until a reclaim drops them.
  const remove = parts.db.prepare('UPDATE files SET deleted_at = ? WHERE id = ? AND address = ? AND deleted_at IS NULL')
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
  }, {
    name: 'file_info',
    methods: ['GET'],
    path: '/api/lighthouse/file_info',
    auth: 'none',
    handle: ({ url, res }) => {
      const cid = parseCid(requireParam(url, 'cid')).toString()
      const row = firstOfCid.get(cid) as FileRow | undefined
      if (row === undefined) throw new HttpFailure(404, `no upload of ${cid} on this service`)
      const { fileSizeInBytes, cid: listed, encryption, fileName, mimeType } = fileRecord(row)
      sendJson(res, 200, { fileSizeInBytes, cid: listed, encryption, fileName, mimeType })
    }
  }, {
    name: 'delete_file',
    methods: ['DELETE'],
    path: '/api/user/delete_file',
    auth: 'api-key',
    handle: ({ url, res, caller }) => {
      const id = requireParam(url, 'id')
      // Only the record leaves the listing: its blocks stay stored (and served by CID), and counted,
      // until a reclaim drops them. Dropping the count now would let an account add and delete past its quota.
      if (remove.run(Date.now(), id, caller.address).changes === 0) throw new HttpFailure(404, 'no upload with this id in this account')
      parts.deleted()
      sendJson(res, 200, { message: 'File deleted successfully' })
    }
  }, {
    name: 'user_data_usage',
    methods: ['GET'],
    path: '/api/user/user_data_usage',
    auth: 'api-key',
    handle: ({ res, caller }) => sendJson(res, 200, parts.limits.usage(caller.address))
  }]
}
