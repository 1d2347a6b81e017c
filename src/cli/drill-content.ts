import type { VerifyResult } from '../sync/index.js'
import { countOf, partOf } from './format.js'

/**
 * What a drill brought back, counted as it was checked: contents, one per CID, beside the paths
 * they are at (`restore --files` counts paths, so both are said).
 */
export function drillContentLine (content: VerifyResult['content'], sample: boolean): string {
  if (content == null) return ''
  if (content.stored === 0) return '; no stored files to bring back (no folder with store = true has published content)'
  return `; ${partOf(content.checked, content.stored, 'stored content', 'stored contents')} (${countOf(content.paths, 'path', 'paths')}) brought back and verified${sample && !content.all ? ' (a sample: --content for all)' : ''}`
}
