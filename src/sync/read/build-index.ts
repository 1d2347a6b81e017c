import { rename } from 'node:fs/promises'
import { openIndex } from '../../index/index.js'
import type { ObjectHome } from '../../store/index.js'
import type { Manifest } from '../../snapshot/index.js'
import { incoming } from './merge-manifest.js'
import { fetchSegments, removeFetched, type FetchInit } from './segment-fetch.js'
import { scrubRestoredIndex } from './scrub-index.js'

/**
 * Builds a whole index from a manifest into `destination` (a new file): every segment fetched and
 * checked, the device with the largest base taken as the file itself (no row copied twice), the
 * other devices and then every delta applied, and every list recorded.
 */
export async function buildIndex (clients: ObjectHome, manifest: Manifest, destination: string, init: FetchInit): Promise<void> {
  const wanted = manifest.devices.flatMap(d => d.segments.map(segment => ({ deviceId: d.deviceId, segment })))
  const largest = [...manifest.devices].sort((a, b) => (b.segments[0]?.entries ?? 0) - (a.segments[0]?.entries ?? 0))[0]
  const kept = largest?.segments[0]?.cid
  // The largest base becomes the index: its pages go to disk while it is checked and the deltas
  // come in, instead of all at the checkpoint that ends the build.
  const syncEarly = { cids: new Set(kept === undefined ? [] : [kept]), started: new Map<string, Promise<void>>() }
  const databases = await fetchSegments(clients, wanted, { ...init, syncEarly })
  try {
    if (kept !== undefined) {
      await syncEarly.started.get(kept)
      await rename(databases.get(kept) as string, destination)
    }
    // Scratch until restore fsyncs and renames it: a killed build leaves a file that is removed.
    const index = openIndex(destination, { check: false, scratch: true })
    try {
      // The base is the publisher's file as it came: its statistics and free pages stay out.
      scrubRestoredIndex(index)
      index.segments.applyDevices(manifest.devices.map(d => d === largest
        ? incoming(d, false, d.segments.slice(1).map(s => databases.get(s.cid) as string))
        : incoming(d, true, d.segments.map(s => databases.get(s.cid) as string))))
      index.finishScratch()
    } finally {
      index.close()
    }
  } finally {
    await removeFetched(databases)
  }
}
