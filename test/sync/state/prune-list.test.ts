import { describe, expect, it } from 'vitest'
import { SyncStore } from '../../../src/sync/index.js'
import { useTempDir } from '../../helpers/temp-dir.js'

describe('the prune list a device holds', () => {
  it('is nothing before the first look, then the list read, replaced whole by the next', async () => {
    const store = new SyncStore(await useTempDir())
    try {
      const list = store.pruneList
      expect(list.listCid()).toBeUndefined()
      expect(list.size()).toBe(0)
      list.hold('bafylist1', ['a', 'b', 'b'])
      expect([list.listCid(), list.size(), list.names('a'), list.names('c')]).toEqual(['bafylist1', 2, true, false])
      list.hold('bafylist2', ['c'])
      expect([list.listCid(), list.size(), list.names('a'), list.names('c')]).toEqual(['bafylist2', 1, false, true])
      list.hold('', [])
      expect([list.listCid(), list.size()]).toEqual(['', 0])
    } finally {
      store.close()
    }
  })

  it('makes every record due for a full check when a list comes, until a check ends, across a reopening', async () => {
    const dir = await useTempDir()
    const store = new SyncStore(dir)
    expect(store.pruneList.fullCheckDue()).toBe(false)
    store.pruneList.hold('', [])
    expect(store.pruneList.fullCheckDue()).toBe(false)
    store.pruneList.noteChecked('device-a', 7)
    store.pruneList.hold('bafylist', ['a'])
    store.close()
    // Killed before the check ended: still due, and the cursor starts over.
    const again = new SyncStore(dir)
    try {
      expect([again.pruneList.fullCheckDue(), again.pruneList.checkedTo('device-a')]).toEqual([true, 0])
      again.pruneList.noteChecked('device-a', 9)
      expect([again.pruneList.fullCheckDue(), again.pruneList.checkedTo('device-a')]).toEqual([false, 9])
    } finally {
      again.close()
    }
  })

  it('lets go of an object this device uploaded since it read the list', async () => {
    const store = new SyncStore(await useTempDir())
    try {
      store.pruneList.hold('bafylist', ['a', 'b'])
      store.pruneList.release('a')
      expect([store.pruneList.names('a'), store.pruneList.names('b')]).toEqual([false, true])
    } finally {
      store.close()
    }
  })

  it('keeps how far this device checked its records, and starts over for another device id', async () => {
    const dir = await useTempDir()
    const store = new SyncStore(dir)
    store.pruneList.noteChecked('device-a', 41)
    store.close()
    const again = new SyncStore(dir)
    try {
      expect(again.pruneList.checkedTo('device-a')).toBe(41)
      // A state dir whose index was made anew has a new device id: its records are checked from the start.
      expect(again.pruneList.checkedTo('device-b')).toBe(0)
      again.pruneList.hold('bafybig', Array.from({ length: 2500 }, (_, i) => `o${i}`))
      expect(again.pruneList.size()).toBe(2500)
    } finally {
      again.close()
    }
  })
})
