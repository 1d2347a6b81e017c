import type { CID } from 'multiformats/cid'
import { directoryNode, estimatedDirectorySize, HAMT_THRESHOLD_BYTES, type CidProfile, type DirectoryEntry, type TreeLink } from '../../content/index.js'
import { HttpFailure } from '../http.js'

/** Kubo reports a file's progress each time this many more of its bytes are read. */
export const PROGRESS_STEP = 256 * 1024
/** Progress lines one answer holds; past them, only each file's last one. */
export const MAX_PROGRESS_LINES = 10_000
/** Directories one request may make (the parts' own and those their paths imply). */
export const MAX_DIRECTORIES = 10_000

/** The type of a directory part, and of a directory in the listing. */
export const DIRECTORY_TYPE = 'application/x-directory'

/** A line of Kubo's `add` answer: a file's or a directory's, or a file's progress. */
export type AddLine = { readonly Name: string, readonly Hash: string, readonly Size: string } | { readonly Name: string, readonly Bytes?: number }

/** What one request stored that Kubo would pin: each thing added on its own (or the wrapping directory). */
export interface AddedRoot { readonly name: string, readonly link: TreeLink, readonly mime: string }

interface Dir { readonly kind: 'dir', readonly children: Map<string, Node> }
interface File { readonly kind: 'file', readonly mime: string, link: TreeLink | undefined }
type Node = Dir | File

/** A file part as it is read: its progress, then its root. */
export interface FileSlot {
  progress: (bytes: number, last: boolean) => void
  done: (link: TreeLink) => void
}

interface Slot { readonly path: string, readonly progress: number[], file: File, last: number | undefined }

/** What Kubo adds (and pins) on its own: a top-level file, or the parts under one top-level name. */
interface Group { readonly name: string, root: Node, readonly slots: Slot[] }

const newDir = (): Dir => ({ kind: 'dir', children: new Map() })

/**
 * The parts of one `add` request placed as Kubo places them: a part named `dir/a.txt` (or an
 * `application/x-directory` part) makes directory nodes; without `wrap-with-directory` each
 * top-level name is added on its own (contiguous parts under one name together), with it every
 * part goes under one directory named "". Answers Kubo's lines in Kubo's order: each group's
 * files (their progress first) in the order sent, then its directories, children before parents.
 */
export class AddTree {
  private readonly groups: Group[] = []
  private directories = 0
  private progressLines = 0

  constructor (private readonly wrap: boolean) {
    if (wrap) this.groups.push({ name: '', root: newDir(), slots: [] })
  }

  /** Places a file part named `path` (no names: unnamed, named by its CID once read). */
  file (path: readonly string[], mime: string): FileSlot {
    const file: File = { kind: 'file', mime, link: undefined }
    const slot: Slot = { path: path.join('/'), progress: [], file, last: undefined }
    const group = this.place(path, file)
    group.slots.push(slot)
    return {
      progress: (bytes, last) => {
        if (last) slot.last = bytes
        else if (this.progressLines < MAX_PROGRESS_LINES) { this.progressLines++; slot.progress.push(bytes) }
      },
      done: link => {
        file.link = link
        // Kubo names an unnamed file by its CID, in a wrapping directory too.
        if (path.length === 0 && group.root.kind === 'dir') this.put(group.root, [link.cid.toString()], file)
      }
    }
  }

  /** Places an `application/x-directory` part: an empty directory unless parts under it follow. */
  directory (path: readonly string[]): void {
    if (path.length === 0) throw new HttpFailure(400, 'a directory part needs a filename')
    this.place(path, newDir())
  }

  private place (path: readonly string[], node: Node): Group {
    const [top, ...rest] = path
    const current = this.groups.at(-1)
    if (this.wrap && current !== undefined) {
      if (path.length > 0) this.put(current.root as Dir, path, node)
      return current
    }
    if (top !== undefined && rest.length > 0 && current !== undefined && current.name === top) {
      // Kubo would drop such a part without a word.
      if (current.root.kind === 'file') throw new HttpFailure(400, `${top.slice(0, 200)} is sent as a file and as a directory`)
      this.put(current.root, rest, node)
      return current
    }
    const group: Group = { name: top ?? '', root: rest.length > 0 ? newDir() : node, slots: [] }
    if (group.root.kind === 'dir') this.countDirectory()
    if (rest.length > 0) this.put(group.root as Dir, rest, node)
    this.groups.push(group)
    return group
  }

  private countDirectory (): void {
    if (++this.directories > MAX_DIRECTORIES) throw new HttpFailure(400, `more than ${MAX_DIRECTORIES} directories in one request`)
  }

  /** Puts `node` at `path` under `dir`, making the directories between. */
  private put (dir: Dir, path: readonly string[], node: Node): void {
    let at = dir
    for (const [i, name] of path.entries()) {
      const existing = at.children.get(name)
      const shown = path.slice(0, i + 1).join('/')
      if (i === path.length - 1) {
        if (existing === undefined) {
          at.children.set(name, node)
          if (node.kind === 'dir') this.countDirectory()
        } else if (existing.kind === 'file' || node.kind === 'file') throw new HttpFailure(400, `two parts are named ${shown.slice(0, 200)}: each path may be sent once`)
        return
      }
      if (existing?.kind === 'file') throw new HttpFailure(400, `${shown.slice(0, 200)} is sent as a file and as a directory`)
      if (existing === undefined) {
        const made = newDir()
        at.children.set(name, made)
        this.countDirectory()
        at = made
      } else {
        at = existing
      }
    }
  }

  /**
   * Makes every directory's node (each told to `onBlock`), and answers Kubo's lines with what Kubo
   * would pin. A directory Kubo would shard (its links estimated at 256 KiB or more) is a 400.
   */
  finish (profile: CidProfile, onBlock: (cid: CID, block: Uint8Array) => void): { lines: AddLine[], roots: AddedRoot[] } {
    const wrapper = this.groups[0]
    const empty = this.wrap ? wrapper?.slots.length === 0 && wrapper.root.kind === 'dir' && wrapper.root.children.size === 0 : this.groups.length === 0
    if (empty) {
      throw new HttpFailure(400, 'no file in the body: send each file in a part with a filename')
    }
    const lines: AddLine[] = []
    const roots: AddedRoot[] = []
    for (const group of this.groups) {
      for (const slot of group.slots) {
        const link = slot.file.link as TreeLink
        for (const bytes of slot.progress) lines.push(progressLine(slot.path, bytes))
        if (slot.last !== undefined) lines.push(progressLine(slot.path, slot.last))
        lines.push({ Name: slot.path === '' ? link.cid.toString() : slot.path, Hash: link.cid.toString(), Size: String(link.treeSize) })
      }
      const root = group.root.kind === 'file' ? group.root.link as TreeLink : this.directoryLines(profile, group.root, group.name, lines, onBlock)
      roots.push({ name: group.name === '' ? root.cid.toString() : group.name, link: root, mime: group.root.kind === 'dir' ? DIRECTORY_TYPE : group.root.mime })
    }
    return { lines, roots }
  }

  /** A directory's node after its children's (Kubo's `outputDirs`: names in byte order, children first). */
  private directoryLines (profile: CidProfile, dir: Dir, path: string, lines: AddLine[], onBlock: (cid: CID, block: Uint8Array) => void): TreeLink {
    const entries: DirectoryEntry[] = []
    const names = [...dir.children.keys()].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)))
    for (const name of names) {
      const child = dir.children.get(name) as Node
      const link = child.kind === 'file' ? child.link as TreeLink : this.directoryLines(profile, child, path === '' ? name : `${path}/${name}`, lines, onBlock)
      entries.push({ name, link })
    }
    if (estimatedDirectorySize(entries) >= HAMT_THRESHOLD_BYTES) {
      throw new HttpFailure(400, `directory ${path === '' ? '(the wrapping one)' : path.slice(0, 200)} holds so many entries that Kubo would shard it (a HAMT), which this service does not implement: send fewer entries in one directory`)
    }
    const made = directoryNode(profile, entries)
    onBlock(made.link.cid, made.block)
    lines.push({ Name: path, Hash: made.link.cid.toString(), Size: String(made.link.treeSize) })
    return made.link
  }
}

/** Kubo's progress line: `Bytes` left out at 0 (Go's omitempty). */
function progressLine (name: string, bytes: number): AddLine {
  return bytes === 0 ? { Name: name } : { Name: name, Bytes: bytes }
}
