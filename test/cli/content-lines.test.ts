import { describe, expect, it } from 'vitest'
import { contentLines } from '../../src/cli/content-lines.js'
import type { StatusDocument } from '../../src/daemon/index.js'

const content = (running: boolean): StatusDocument => ({
  content: {
    running, folders: [{ folder: 'kept', protected: { files: 3, bytes: 22 }, pending: { files: 0, bytes: 0 }, failed: 0, leftOut: { files: 0, bytes: 0 } }],
    failures: [], tooLarge: 0, lastRun: null, lastError: null, retryAt: null, uploadRate: running ? 2048 : 0, storedBytesTotal: 12, savedByDedup: 10,
    failingTooLong: false, uploading: [], failingBoundMs: 3_600_000
  }
}) as unknown as StatusDocument

describe('status content lines (src/cli/content-lines.ts)', () => {
  it('shows an upload rate only while a pass runs, and what dedup saved either way', () => {
    const [idle] = contentLines(content(false))
    expect(idle).toMatch(/^content: idle · 12 B uploaded since start · 10 B saved by dedup/)
    expect(idle).not.toContain('upload rate')
    expect(contentLines(content(true))[0]).toMatch(/^content: storing now · upload rate 2(\.0)? KiB\/s · /)
  })

  it('says when index objects were refused, and nothing when none was (or a daemon too old to count them)', () => {
    const refused = content(false) as unknown as { content: Record<string, unknown> }
    refused.content.indexRefused = 2
    expect(contentLines(refused as unknown as StatusDocument).join('\n')).toContain('2 content index objects were refused as damaged or forged: their records are not used')
    expect(contentLines(content(false)).join('\n')).not.toContain('refused')
  })
})
