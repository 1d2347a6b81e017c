import { describe, expect, it } from 'vitest'
import { retentionLines } from '../../src/cli/retention-lines.js'

describe('retentionLines', () => {
  it('shows the daemon\'s last failed run with its code', () => {
    const lines = retentionLines({
      enabled: true, running: false, lastRun: null, skipped: null,
      lastError: { at: new Date().toISOString(), message: 'the pointer holds bafy, whose history lacks this device\'s own last publish', code: 'ERR_RETENTION_POINTER_SET_BACK' }
    })
    expect(lines[0]).toMatch(/^retention: the last forget and prune failed at .*: the pointer holds bafy, .* \[ERR_RETENTION_POINTER_SET_BACK\]$/)
  })

  it('says what a prune rewrote, what would be rewritten, and what waits for a publish', () => {
    const at = new Date().toISOString()
    const plan = { at, dryRun: false, held: { objects: 9, bytes: 900 }, wouldFree: { objects: 0, bytes: 0 }, young: 0, chainsHeld: 0 }
    const lines = retentionLines({
      enabled: true, running: false, lastRun: null, skipped: null, lastError: null,
      lastPrune: { at, objects: 2, bytes: 200, kinds: { root: 0, content: 2, segment: 0, manifest: 0 }, repacked: { packs: 1, bytes: 4096 } },
      plan: { ...plan, repack: { packs: 0, freed: 0, waiting: 1, waitingBytes: 2048 } }
    })
    expect(lines.find(l => l.startsWith('retention: last prune'))).toMatch(/deleted 2 objects \(200 B\); rewrote 1 mostly unused content pack \(4 KiB of live files copied\)$/)
    expect(lines).toContain('retention: 1 rewritten content pack waits for a publish; the prune after it deletes it (2 KiB unused)')
    const dry = retentionLines({ enabled: true, running: false, lastRun: null, skipped: null, lastError: null, plan: { ...plan, dryRun: true, repack: { packs: 3, freed: 10_240, waiting: 0, waitingBytes: 0 } } })
    expect(dry).toContain('retention: a prune would also rewrite 3 mostly unused content packs, to free 10 KiB once a publish and the prune after it have run')
  })
})
