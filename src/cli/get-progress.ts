import type { GetFilesProgress } from '../sync/index.js'
import { formatBytes, formatCount } from './format.js'

/** Without a terminal, a line this often at most: a log gets word of a long restore, not a flood. */
export const PROGRESS_LINE_MS = 5000

/** A single file below this size gets no progress line. */
const SMALL_BYTES = 1024 * 1024

export interface ProgressInit {
  readonly json: boolean
  /** Whether stderr is a terminal: a bar redrawn in place there, whole lines elsewhere. */
  readonly tty: boolean
  readonly write?: (text: string) => void
  readonly now?: () => number
}

/**
 * What `get` and `restore --files` say while they work: JSON lines on stdout with `--json`; a bar
 * (files, bytes, rate, ETA) on a terminal; otherwise a line on stderr every few seconds.
 */
export function progressReporter (init: ProgressInit): (event: GetFilesProgress) => void {
  if (init.json) return (event) => { process.stdout.write(jsonLine(event) + '\n') }
  const write = init.write ?? ((text: string) => { process.stderr.write(text) })
  const now = init.now ?? Date.now
  const started = now()
  let files = 0
  let totalFiles = 0
  let bytes = 0
  let totalBytes = 0
  let last = started
  // The bar's last line is drawn once: the symlinks and directories after the files add nothing.
  let finished = false
  return (event) => {
    if (event.type === 'get:start') { totalFiles = event.detail.files; totalBytes = event.detail.bytes; return }
    if (finished) return
    if (event.type === 'get:bytes') bytes += event.detail.bytes
    if (event.type === 'get:file') files++
    const at = now()
    // Whole bytes: formatBytes shows a fraction below 1 KiB as it is.
    const rate = Math.round(bytes / Math.max(0.001, (at - started) / 1000))
    if (!init.tty) {
      // The last file is followed by the summary on stdout: no line for it here. One small file
      // is over in a moment, however slow the machine: no line for it either.
      if (at - last < PROGRESS_LINE_MS || files === totalFiles || (totalFiles <= 1 && totalBytes < SMALL_BYTES)) return
      last = at
      write(`cidsync: ${formatCount(files)} of ${formatCount(totalFiles)} files, ${formatBytes(bytes)} of ${formatBytes(totalBytes)} (${formatBytes(rate)}/s)\n`)
      return
    }
    if (at - last < 100 && files !== totalFiles) return
    last = at
    // Files found right already write no bytes: the last bar has no estimate left to give.
    const eta = files < totalFiles && rate > 0 && totalBytes > bytes ? ` ETA ${etaText(Math.ceil((totalBytes - bytes) / rate))}` : ''
    const bar = `[${'#'.repeat(totalBytes === 0 ? 30 : Math.round(bytes / totalBytes * 30)).padEnd(30, '.')}]`
    write(`\r${bar} ${files}/${totalFiles} files, ${formatBytes(bytes)} of ${formatBytes(totalBytes)}, ${formatBytes(rate)}/s${eta}   `)
    if (files === totalFiles) { write('\n'); finished = true }
  }
}

/** The name `--json` prints for each event: scripts read these, so they stay as they are. */
const JSON_TYPES: Readonly<Record<GetFilesProgress['type'], string>> = { 'get:start': 'start', 'get:bytes': 'bytes', 'get:file': 'file', 'get:entry': 'entry' }

/** One `--json` line: the event's detail beside its printed name (`{"type":"file","path":...}`). */
export function jsonLine (event: GetFilesProgress): string {
  return JSON.stringify({ type: JSON_TYPES[event.type], ...event.detail })
}

/** `45 s`, `12 min`, `3 h`: an estimate, said as roughly as it is known. */
function etaText (seconds: number): string {
  if (seconds < 90) return `${seconds} s`
  if (seconds < 90 * 60) return `${Math.round(seconds / 60)} min`
  return `${Math.round(seconds / 3600)} h`
}
