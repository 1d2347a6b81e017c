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
  const stopped = content.failedFiles?.more === true ? `; the drill stopped after ${countOf(content.failedFiles.objects, 'damaged object', 'damaged objects')}, and the rest were not checked` : ''
  return `; ${partOf(content.checked, content.stored, 'stored content', 'stored contents')} (${countOf(content.paths, 'path', 'paths')}) brought back and verified${sample && !content.all ? ' (a sample: --content for all)' : ''}${stopped}`
}

/**
 * The stored files a `--content` drill found would not come back, when more than one: counted,
 * with their objects, the first named. Empty when only one failed.
 */
export function failedFilesLine (failed: NonNullable<VerifyResult['content']>['failedFiles']): string {
  if (failed === undefined || failed.count < 2) return ''
  const stopped = failed.more ? ` (it stopped after ${countOf(failed.objects, 'damaged object', 'damaged objects')}: there may be more)` : ''
  const names = failed.files.map(f => `"${safeText(f.file).replaceAll('"', '\\"')}"`).join(', ')
  return `. In all, the drill found ${countOf(failed.count, 'stored file', 'stored files')} in ${countOf(failed.objects, 'object', 'objects')} that would not come back through the gateways${stopped}. A damaged object fails every file it holds there; ${failed.files.length < failed.count ? `the first ${failed.files.length}` : 'they are'}: ${names}`
}
