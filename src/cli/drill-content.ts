import type { VerifyResult } from '../sync/index.js'
import { countOf, partOf } from './format.js'
import { safeText } from './safe-text.js'

/**
 * What a drill brought back, counted as it was checked: contents, one per CID, beside the paths
 * they are at (`restore --files` counts paths, so both are said).
 */
export function drillContentLine (content: VerifyResult['content'], sample: boolean): string {
  if (content == null) return ''
  if (content.stored === 0) return '; no stored files to bring back (no folder with store = true has published content)'
  return `; ${partOf(content.checked, content.stored, 'stored content', 'stored contents')} (${countOf(content.paths, 'path', 'paths')}) brought back and verified${sample && !content.all ? ' (a sample: --content for all)' : ''}`
}

/**
 * The other stored files a `--content` drill found would not come back, after the first: named,
 * as many as the drill walked to (it stops at a bound, and says so). Empty when only one failed.
 */
export function failedFilesLine (failed: NonNullable<VerifyResult['content']>['failedFiles']): string {
  if (failed === undefined || failed.files.length < 2) return ''
  const count = failed.more ? `${failed.files.length} stored files or more (the drill stopped there)` : `${failed.files.length} stored files`
  return `. In all, ${count} would not come back: ${failed.files.map(f => safeText(f.file)).join(', ')}`
}
