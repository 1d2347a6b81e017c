import { describe, expect, it } from 'vitest'
import { checkDownloadRoom } from '../../../src/sync/index.js'
import { spaceLeft } from '../../../src/util/space-left.js'
import { useTempDir } from '../../helpers/temp-dir.js'

describe('a dashboard download staged in the state dir', () => {
  it('is refused, with what to do, when it would leave the state dir\'s disk nearly full', async () => {
    const dir = await useTempDir()
    const left = spaceLeft(dir)
    expect(left).toBeGreaterThan(0)
    let refusal: (Error & { code?: string }) | undefined
    try {
      checkDownloadRoom(dir, left as number)
    } catch (err) {
      refusal = err as Error & { code?: string }
    }
    expect(refusal?.code).toBe('ERR_DOWNLOAD_NO_ROOM')
    expect(refusal?.message).toMatch(/cidsync get PATH --to DIR/)
  })

  it('goes ahead when the file fits with room to spare', async () => {
    const dir = await useTempDir()
    expect(() => { checkDownloadRoom(dir, 1024 * 1024) }).not.toThrow()
  })
})
