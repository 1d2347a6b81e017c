/**
 * The bytes a dag/import request stored anew, charged to the DAG roots it lists. A DAG's claimed
 * size (its UnixFS `fileSize`) is the sender's word: a dag-pb node with no UnixFS data, or a
 * directory, claims nothing of the blocks under it, so a quota counted on claims alone let an
 * account store without end. Each new block is charged once, to the first root whose DAG reaches
 * it (links followed only among the request's own blocks), so the charges add up to what was stored.
 */
export function chargeRoots (roots: readonly string[], links: ReadonlyMap<string, readonly string[]>, newBytes: ReadonlyMap<string, number>): Map<string, number> {
  const charged = new Set<string>()
  const out = new Map<string, number>()
  for (const root of roots) {
    let sum = 0
    const stack = [root]
    while (stack.length > 0) {
      const cid = stack.pop() as string
      if (charged.has(cid)) continue
      charged.add(cid)
      sum += newBytes.get(cid) ?? 0
      for (const child of links.get(cid) ?? []) if (!charged.has(child)) stack.push(child)
    }
    out.set(root, sum)
  }
  return out
}
