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
})
