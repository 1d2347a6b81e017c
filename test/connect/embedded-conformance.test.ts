import { onTestFinished } from 'vitest'
import { open, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { startEmbedded } from '../../src/connect/embedded.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { objectStoreConformance } from '../store/conformance.js'
import { pointerRegistryConformance } from '../store/pointer-conformance.js'

/** Flips a byte in the middle of every pack: the one object stored there is damaged, for its packs and its gateway alike. */
async function damagePacks (dir: string): Promise<void> {
  const packs = join(dir, 'packs')
  for (const name of await readdir(packs)) {
    const handle = await open(join(packs, name), 'r+')
    try {
      const { size } = await handle.stat()
      const one = Buffer.alloc(1)
      await handle.read(one, 0, 1, size >> 1)
      one[0] = (one[0] as number) ^ 1
      await handle.write(one, 0, 1, size >> 1)
    } finally {
      await handle.close()
    }
  }
}

for (const thread of [false, true]) {
  objectStoreConformance(`the embedded service${thread ? ' in a thread of its own' : ', its packs read in this process'}`, async () => {
    const dir = join(await useTempDir(), 'service')
    const embedded = await startEmbedded(dir, { thread })
    onTestFinished(async () => { await embedded.clients.close(); await embedded.service.stop() })
    return { store: embedded.clients.objects, deleteKeepsBytes: true, damage: async () => { await damagePacks(dir) } }
  })
}

for (const thread of [false, true]) {
  pointerRegistryConformance(`the embedded service${thread ? ' in a thread of its own (over HTTP)' : ' (its pointer read and written in this process)'}`, async () => {
    const embedded = await startEmbedded(join(await useTempDir(), 'service'), { thread })
    onTestFinished(async () => { await embedded.clients.close(); await embedded.service.stop() })
    return { pointers: embedded.clients.pointers }
  })
}
