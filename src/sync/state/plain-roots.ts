import type Database from 'better-sqlite3'
import type { Statement } from 'better-sqlite3'

/** A publish's node of the plain root, as uploaded: its CID and the size a link to it carries. */
export interface PlainNode { readonly cid: string, readonly size: number }

/** A publish's node, when uploaded, and the root uploaded for it when this device made the publish. */
export interface PlainRootRow { readonly manifest: string, readonly node?: PlainNode, readonly root?: string }

/**
 * `plain_roots` in `sync.sqlite`: each publish whose node of the plain root this device uploaded
 * (docs/snapshot-format.md, "The plain root"), so a later publish links it as its previous
 * without walking the chain again; and for its own publishes, the root it uploaded. A root with
 * content does not link its own publish's node: the next publish uploads that one, linked.
 */
export class PlainRoots {
  private readonly statements: Record<'node' | 'root' | 'put' | 'roots', Statement>

  constructor (private readonly db: Database.Database) {
    this.statements = {
      node: db.prepare('SELECT node, size FROM plain_roots WHERE manifest = ?'),
      root: db.prepare('SELECT root FROM plain_roots WHERE manifest = ?').pluck(),
      roots: db.prepare('SELECT manifest, root FROM plain_roots WHERE root IS NOT NULL ORDER BY made_at'),
      // A publish's node is a function of the chain, the same each time: what is known is kept.
      put: db.prepare(`INSERT INTO plain_roots (manifest, node, size, root, made_at) VALUES (@manifest, @node, @size, @root, @at)
        ON CONFLICT (manifest) DO UPDATE SET node = COALESCE(excluded.node, node), size = COALESCE(excluded.size, size), root = COALESCE(excluded.root, root)`)
    }
  }

  /** The node uploaded for the publish `manifest`, if this device uploaded one. */
  node (manifest: string): PlainNode | undefined {
    const row = this.statements.node.get(manifest) as { node: string | null, size: number | null } | undefined
    if (row === undefined || row.node === null || row.size === null) return undefined
    return { cid: row.node, size: row.size }
  }

  /** The plain root this device uploaded for its publish `manifest`. */
  root (manifest: string): string | undefined {
    return (this.statements.root.get(manifest) as string | null | undefined) ?? undefined
  }

  /** Every root this device uploaded, with its publish, oldest first (a prune deletes those of forgotten publishes). */
  roots (): Array<{ readonly manifest: string, readonly root: string }> {
    return this.statements.roots.all() as Array<{ manifest: string, root: string }>
  }

  /** Records what one upload put on the service, in one transaction: only once it is there. */
  record (rows: readonly PlainRootRow[], at = Date.now()): void {
    this.db.transaction(() => {
      for (const row of rows) this.statements.put.run({ manifest: row.manifest, node: row.node?.cid ?? null, size: row.node?.size ?? null, root: row.root ?? null, at })
    }).immediate()
  }
}
