import { describe, it, expect } from 'vitest'
import { glanceOf } from '../../src/daemon/status-glance.js'
import type { StatusDocument } from '../../src/daemon/index.js'

const DRILL = '2026-05-01T10:00:00.000Z'

/** A status where everything is done: two files stored and published, the last drill fine, one mirror caught up. */
function healthy (): Record<string, any> {
  return {
    watcher: { state: 'watching', currentAt: '2026-05-01T09:00:00.000Z' },
    folders: [{ name: 'notes', state: 'watching', files: 2, error: null, skipped: 0, scan: { toHash: 0 } }],
    filesSkipped: 0,
    index: { files: 2, writeState: 'ok', lastError: null },
    service: { error: null },
    auth: { sessionToken: { warning: null } },
    publish: {
      running: false, pendingAt: null, blocked: null, held: null, pointerProblem: null, lastError: null,
      last: { cid: 'bafy-last', at: '2026-05-01T09:30:00.000Z', entries: 2 },
      pointer: { cid: 'bafy-last', inSync: true, why: null, setBack: false }
    },
    content: {
      failingTooLong: false, failures: [],
      folders: [{ folder: 'notes', protected: { files: 2, bytes: 10 }, pending: { files: 0, bytes: 0 }, failed: 0, leftOut: { files: 0, bytes: 0 } }]
    },
    restorable: { ok: true, checkedAt: DRILL, cid: 'bafy-last', failed: null, lastSuccessAt: DRILL },
    mirrors: [{ name: 'nas', objectsBehind: 0, publishesBehind: 0, lagging: false, lastError: null, pointer: null, restorable: null, unavailable: { count: 0, last: null } }]
  }
}

const glance = (s: Record<string, any>): ReturnType<typeof glanceOf> => glanceOf(s as unknown as StatusDocument)

describe('the one-glance line', () => {
  it('is green in one sentence when every file is stored and published, the drill restored it, and the mirror is caught up', () => {
    expect(glance(healthy())).toEqual({
      level: 'green',
      sentence: `All 2 files are stored and published; the index is restorable as of the drill at ${DRILL}; mirror nas is caught up.`,
      todo: null
    })
    const one = healthy()
    one.index.files = 1
    expect(glance(one).sentence).toMatch(/^The one file is stored and published; /)
  })

  it('says which folders keep the index only, and a drill older than the last publish', () => {
    const s = healthy()
    s.folders.push({ name: 'photos', state: 'watching', files: 3, error: null, skipped: 0, scan: { toHash: 0 } })
    s.index.files = 5
    s.publish.last.cid = 'bafy-newer'
    s.mirrors = []
    expect(glance(s)).toMatchObject({ level: 'green', sentence: `All 5 files are published, 2 with their content stored (photos keeps the index only); the index is restorable as of the drill at ${DRILL}, published again since; no mirrors are set up.` })
  })

  it('says when no folder stores content: the index alone is published', () => {
    const s = healthy()
    s.content.folders = []
    expect(glance(s).sentence).toMatch(/^All 2 files are published, as an index only \(no folder has store = true\); /)
  })

  it('is amber while files wait, with the one thing to do', () => {
    const s = healthy()
    s.content.folders[0].pending.files = 1
    expect(glance(s)).toEqual({ level: 'amber', sentence: expect.stringMatching(/^1 file waits to be stored; /), todo: 'nothing: they are stored in the next pass' })
    const skipped = healthy()
    skipped.folders[0] = { ...skipped.folders[0], skipped: 80, skippedWithoutContent: 3 }
    expect(glance(skipped)).toMatchObject({ level: 'amber', sentence: expect.stringMatching(/^77 paths are skipped, not indexed; /), todo: expect.stringContaining('skipped list') })
    // Links not followed and FIFOs: listed, but nothing of theirs is lost.
    skipped.folders[0].skippedWithoutContent = 80
    expect(glance(skipped).level).toBe('green')
    const changes = healthy()
    changes.publish.pointer = { cid: 'bafy-last', inSync: false, why: 'changes here are waiting to be published', setBack: false }
    changes.publish.pendingAt = '2026-05-01T10:05:00.000Z'
    expect(glance(changes)).toMatchObject({ level: 'amber', todo: 'nothing: they are published at 2026-05-01T10:05:00.000Z' })
    const undrilled = healthy()
    undrilled.restorable = null
    expect(glance(undrilled)).toMatchObject({ level: 'amber', sentence: expect.stringContaining('no restore drill has checked the index yet'), todo: 'press Verify now (or run `cidsync verify`)' })
    const behind = healthy()
    behind.mirrors[0].objectsBehind = 3
    expect(glance(behind)).toMatchObject({ level: 'amber', sentence: expect.stringContaining('mirror nas is catching up (3 objects behind)') })
    // Seen: "catching up (0 objects behind)" while a pointer move waited, and "1 objects".
    behind.mirrors[0].objectsBehind = 0
    behind.mirrors[0].publishesBehind = 1
    expect(glance(behind).sentence).toContain('mirror nas is catching up (1 publish behind)')
    behind.mirrors[0].objectsBehind = 1
    behind.mirrors[0].publishesBehind = 2
    expect(glance(behind).sentence).toContain('mirror nas is catching up (1 object and 2 publishes behind)')
  })

  it('is red where status --check fails, and a red clause\'s fix comes before an amber one\'s', () => {
    const s = healthy()
    s.folders[0].skipped = 1
    s.restorable = { ok: false, checkedAt: DRILL, cid: 'bafy-last', failed: 'bafy-seg: not found', lastSuccessAt: null }
    expect(glance(s)).toEqual({
      level: 'red',
      sentence: `1 path is skipped, not indexed; the index is NOT restorable (the drill at ${DRILL} failed: bafy-seg: not found); mirror nas is caught up.`,
      todo: 'publish again, then Verify now (`cidsync snapshot`, then `cidsync verify`)'
    })
    const blocked = healthy()
    blocked.publish.blocked = 'the service answered 401: run cidsync login'
    expect(glance(blocked)).toMatchObject({ level: 'red', sentence: expect.stringMatching(/^Publishing is stopped; /), todo: 'the service answered 401: run cidsync login' })
    const lagging = healthy()
    lagging.mirrors[0] = { ...lagging.mirrors[0], objectsBehind: 9, lagging: true, lastError: { at: DRILL, message: 'refused', code: 'ERR_REMOTE_NETWORK', advice: 'the mirror does not answer' } }
    expect(glance(lagging)).toMatchObject({ level: 'red', todo: 'the mirror does not answer' })
    // A token that expires soon and that nothing renews: red, as status --check fails for it.
    const token = healthy()
    const problem = 'the session token expires in about 3 days, and nothing renews it; publishing stops then'
    token.auth.sessionToken = { warning: problem, problem }
    expect(glance(token)).toMatchObject({ level: 'red', sentence: expect.stringMatching(/^Publishing stops soon; /), todo: problem })
  })
})
