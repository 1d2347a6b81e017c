import { applyPolicy, type Decision, type Publish, type RetentionPolicy } from '../../retention/index.js'
import type { Manifest } from '../../snapshot/index.js'
import { ForgetRefusedError, NothingFoundError } from '../../errors.js'
import { isUnusable, walkHistory, type HistoryEntry } from '../read/index.js'
import type { Repository } from '../repository.js'

/** One publish of the chain, as a forget plans it: what history shows, its marks, and its manifest. */
export interface ChainPublish extends Publish {
  readonly entry: HistoryEntry
  /** Undefined for a `/1` snapshot, which has no `previous` and is never rewritten. */
  readonly manifest: Manifest | undefined
}

/** What the policy makes of the pointer's chain: each publish kept (with why) or forgotten, in the chain's order, head first. */
export interface ForgetPlan {
  /** What the pointer named when the chain was read. */
  readonly pointer: string
  readonly decisions: ReadonlyArray<Decision<ChainPublish>>
  readonly kept: number
  readonly forgotten: number
  /** Publishes that carried a label `unmark` takes off: each is sealed again without it. */
  readonly unmarked: number
}

export interface PlanInit {
  readonly policy: RetentionPolicy
  /** The present, for `keep_within`. */
  readonly now: Date
  readonly timeZone: string
  /** Labels to take off every publish that carries them, before the policy is applied. */
  readonly unmark?: readonly string[]
  readonly signal?: AbortSignal
}

/**
 * Reads the whole chain from the pointer and applies the policy to it. A chain holding a publish
 * this device cannot read is refused whole: what it cannot read it cannot keep or relink.
 */
export async function planForget (repository: Repository, init: PlanInit): Promise<ForgetPlan> {
  const { config } = repository
  const pointer = (await repository.pointers.current(config.namespace, config.network, { signal: init.signal })).snapshotCid
  const chain: ChainPublish[] = []
  const unmark = new Set(init.unmark ?? [])
  const fetch = repository.readContext('forget', { signal: init.signal })
  try {
    for await (const { entry, manifest } of walkHistory(repository.home, pointer, repository.manifestCache, fetch)) {
      chain.push({ cid: entry.cid, time: new Date(entry.at), device: entry.device, marks: (manifest?.marks ?? []).filter(m => !unmark.has(m)), entry, manifest })
    }
  } catch (err) {
    if (!isUnusable(err)) throw err
    throw new ForgetRefusedError(`the history holds a publish this device cannot read (${(err as Error).message}): nothing is forgotten. Run \`cidsync verify --full\` to see which`, { cause: err })
  }
  const last = chain.at(-1)
  if (last?.entry.previous !== null && last !== undefined) {
    throw new ForgetRefusedError(`the history is longer than one walk reads (it goes on before ${last.cid}): nothing is forgotten`)
  }
  const unmarked = chain.filter(p => marksChanged(p)).length
  // A label no publish carries is most likely mistyped: nothing is taken off or forgotten for it.
  for (const label of unmark) {
    if (!chain.some(p => p.manifest?.marks?.includes(label) === true)) throw new NothingFoundError(`no publish in the history carries the label ${JSON.stringify(label)}: nothing is forgotten. \`cidsync history\` lists the labels (KEPT AS)`)
  }
  // The policy reads the publishes by time; the plan keeps the chain's order. The relink follows
  // it, so the pointer's publish stays the head even when a clock ran behind: each publish holds
  // what it merged from the one before it, and the head is what a restore installs.
  const position = new Map(chain.map((p, i) => [p, i]))
  // Each device's last publish in the chain stays: the device checks its own last publish is in the history.
  const deviceHeads = new Set<string>()
  const devicesSeen = new Set<string>()
  for (const p of chain) {
    if (devicesSeen.has(p.device)) continue
    devicesSeen.add(p.device)
    deviceHeads.add(p.cid)
  }
  const decisions = applyPolicy(chain, init.policy, { now: init.now, timeZone: init.timeZone, pointer, deviceHeads })
    .sort((a, b) => (position.get(a.publish) ?? 0) - (position.get(b.publish) ?? 0))
  const kept = decisions.filter(d => d.keep).length
  return { pointer, decisions, kept, forgotten: decisions.length - kept, unmarked }
}

/** Whether a publish's labels after `unmark` differ from its manifest's: it must be sealed again. */
export function marksChanged (publish: ChainPublish): boolean {
  return (publish.manifest?.marks?.length ?? 0) !== publish.marks.length
}
