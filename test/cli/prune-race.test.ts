import { describe, expect, it } from 'vitest'
import { join } from 'node:path'
import { proofDir } from '../proof/harness.js'
import { accountDevice, selfHostedAccount } from './account-devices.js'
import { ok, shareKey, type ContentDevice } from './content-devices.js'
import { deletedOf, expectLatestRestorable, Versions, type PruneJson } from './retention-devices.js'

const RETENTION = 'compact_after_deltas = 1\n[retention]\nkeep_last = 1\nprune_margin = "0s"\n'
/** Publishes each of the two devices makes while the third forgets and prunes. */
const PUBLISHES = 5
/** Forget and prune rounds at most: the loop ends when both have published, well before. */
const MOST_ROUNDS = 200
const CONTENDED = /\[ERR_(?:FORGET|PRUNE)_CONTENDED\]/

/** A forget or prune that another device's publish outran is refused whole (exit 1): it is run again. */
async function retained (d: ContentDevice, args: string[]): Promise<{ contended: boolean, stdout: string }> {
  const result = await d.run(args)
  if (result.code === 1 && CONTENDED.test(result.stderr)) return { contended: true, stdout: '' }
  expect(result.code, `${d.name}: ${args.join(' ')}: ${result.stderr}`).toBe(0)
  return { contended: false, stdout: result.stdout }
}

describe('two devices publishing while a third forgets and prunes, on one self-hosted service', () => {
  it('every device\'s last publish comes back whole, and the history verifies', async () => {
    const root = await proofDir()
    const account = await selfHostedAccount(join(root, 'service'))
    const a = await accountDevice(root, 'a', account, RETENTION)
    const b = await accountDevice(root, 'b', account, RETENTION)
    const c = await accountDevice(root, 'c', account, RETENTION)
    await shareKey(a, b)
    await shareKey(a, c)
    // A cycling file: a later version holds again the bytes a prune may have taken since.
    const va = new Versions(a, { cycleBytes: 1536 * 1024 })
    const vb = new Versions(b, { start: '2026-03-01T00:30:00.000Z', cycleBytes: 1536 * 1024 })
    await va.publish()
    await vb.publish()

    // a's last publish waits for a prune that deleted: a deletion always lands inside the race, however slow the machine.
    let deletedOnce = (): void => {}
    const pruneDeleted = new Promise<void>(resolve => { deletedOnce = resolve })
    const publishing = async (v: Versions, beforeLast?: Promise<void>): Promise<void> => {
      for (let i = 0; i < PUBLISHES; i++) {
        if (i === PUBLISHES - 1 && beforeLast !== undefined) await beforeLast
        await v.publish()
      }
    }
    const both = Promise.all([publishing(va, pruneDeleted), publishing(vb)])
    let finished = false
    both.then(() => { finished = true }, () => { finished = true })
    let rounds = 0
    let contended = 0
    let deleted = 0
    while (!finished && rounds < MOST_ROUNDS) {
      rounds++
      const forgot = await retained(c, ['forget', '--json'])
      const pruned = await retained(c, ['prune', '--json'])
      contended += Number(forgot.contended) + Number(pruned.contended)
      if (!pruned.contended) deleted += deletedOf(JSON.parse(pruned.stdout) as PruneJson)
      if (deleted > 0) deletedOnce()
    }
    deletedOnce()
    await both
    console.log(`[race] ${rounds} forget and prune rounds, ${contended} contended, ${deleted} objects deleted; publishes contended: a ${va.contended}, b ${vb.contended}`)
    expect(deleted).toBeGreaterThan(0)

    // Once more each: a device takes in what the others did, and a forget and prune with no one publishing.
    await ok(a, ['snapshot'])
    await ok(b, ['snapshot'])
    await ok(c, ['forget'])
    await ok(c, ['prune'])
    const scratch = join(root, 'scratch')
    await expectLatestRestorable(a, va.latest(), scratch, 'a')
    await expectLatestRestorable(b, vb.latest(), scratch, 'b')
    for (const d of [a, b, c]) {
      const verified = await d.run(['verify', '--full', '--content'])
      expect(verified.code, `${d.name}: verify --full --content: ${verified.stdout}${verified.stderr}`).toBe(0)
    }
  }, 900_000)
})
