import type { Config } from '../config/index.js'
import { CarFormatError, ImportOlderError, PointerNotFoundError, RemoteResponseError } from '../errors.js'
import type { CarImported, ServiceClients } from '../remote/index.js'
import { ENGINE, ENGINE_V1 } from '../snapshot/index.js'
import { SNAPSHOT_PROFILE, walkEntries, type FetchInit, type Repository } from '../sync/index.js'
import { failpoint } from '../util/failpoint.js'
import { checkChain } from './check-chain.js'
import { askDeals } from './import-deals.js'
import { namedByChain } from './chain-named.js'
import { scanCar, type ScannedCar } from './scan-car.js'
import * as CarBufferWriter from '@ipld/car/buffer-writer'
import { CID } from 'multiformats/cid'
import type { ProgressEvent, ProgressOptions } from '../util/progress.js'

/** Told of each step as it starts (`import:step`), and of the bytes sent (`import:upload`). */
export type ImportProgressEvent =
  | ProgressEvent<'import:step', { readonly step: ImportStep }>
  | ProgressEvent<'import:upload', { readonly sent: number, readonly total: number }>

export interface ImportInit extends ProgressOptions<ImportProgressEvent> {
  readonly file: string
  /** Move the pointer even when it holds a publish the CAR's chain does not (set it back). */
  readonly force?: boolean
}

export type ImportStep = 'scan' | 'upload' | 'check' | 'deal' | 'pointer'

export interface ImportResult {
  /** The CAR's root: its plain root, or its manifest (a CAR of an older cidsync). */
  readonly root: string
  /** The publish it holds, where the pointer is moved: the plain root's manifest, or the root. */
  readonly publish: string
  readonly at: string
  readonly blocks: number
  readonly bytes: number
  /** The DAGs the CAR held (one per object). */
  readonly objects: number
  /** The CAR's DAGs its chain does not name (not a publish, segment or content object of it): on the service, but asked no deal and given no mirror. */
  readonly unnamed: readonly string[]
  readonly publishes: number
  readonly segments: number
  readonly dealsAsked: number
  /** Objects not asked a deal again: this device's index already asked one, or the service lists deals for it. */
  readonly dealsSkipped: number
  /** What the pointer held before (null: none), and whether it moved. */
  readonly previous: string | null
  readonly moved: boolean
}

/**
 * Puts every object of a CAR on the configured service, checks the chain it holds from there, asks
 * for deals, then moves the pointer to the publish it holds (docs/exits.md):
 * 1. every block is checked against its CID locally, before anything is sent;
 * 2. the CAR goes to `/api/v0/dag/import` (which checks every block again);
 * 3. the chain is read back from the service as a restore drill reads it: a root or segment that
 *    does not decrypt under this device's key or is bound to another namespace is refused, named;
 * 4. a pointer holding a publish the chain does not hold (the CAR is older, or another line) is
 *    left alone unless `force`;
 * 5. deals are asked for each object the chain names (publishes, segments, content objects; any
 *    other DAG of the CAR is named in the result, not dealt) that has none yet (run again, those
 *    asked before are skipped, counted), then the pointer is set and read back.
 * Every step is idempotent: a run killed anywhere is finished by running it again.
 */
export async function importCar (repository: Repository<ServiceClients>, init: ImportInit): Promise<ImportResult> {
  const { config, home: clients } = repository
  const fetch = repository.readContext('import', { signal: init.signal })

  init.onProgress?.({ type: 'import:step', detail: { step: 'scan' } })
  const car = await scanCar(init.file, init.signal)
  failpoint('import:scanned')

  init.onProgress?.({ type: 'import:step', detail: { step: 'upload' } })
  const answer = await uploadCar(clients, init, car)
  const context = { service: 'upload endpoint', method: 'POST', url: '/api/v0/dag/import' }
  if (answer.stats !== undefined && answer.stats.blocks !== car.blocks) throw new RemoteResponseError(context, `read ${answer.stats.blocks} blocks of the CAR, not the ${car.blocks} it holds: try again`)
  const pinError = answer.roots.find(r => r.cid === car.root)?.pinError
  if (pinError !== undefined && pinError !== '') throw new CarFormatError(`the service could not pin the CAR's root ${car.root}: ${pinError}`)
  failpoint('import:uploaded')

  init.onProgress?.({ type: 'import:step', detail: { step: 'check' } })
  const chain = await checkChain(clients, car.publish, fetch)
  failpoint('import:checked')

  const previous = await currentPointer(clients, config, init.signal)
  if (previous !== null && previous !== car.publish && !chain.publishes.includes(previous) && init.force !== true) {
    throw new ImportOlderError(await whyNot(clients, config, previous, car.publish, chain.head.at, fetch))
  }

  // Deals (and mirrors) are for what the chain names; anything else the CAR carried is said, not kept.
  const named = await namedByChain(clients, car.publish, car.objects, fetch)
  const chainObjects = car.objects.filter(o => named.has(o))
  const unnamed = car.objects.filter(o => !named.has(o))

  init.onProgress?.({ type: 'import:step', detail: { step: 'deal' } })
  const deals = config.snapshot.deal ? await askDeals(clients, config, chainObjects, init.signal) : { asked: 0, skipped: 0 }
  failpoint('import:dealt')

  init.onProgress?.({ type: 'import:step', detail: { step: 'pointer' } })
  // Read again: the pointer service has no compare-and-swap, and a device that published while the
  // deals were asked (minutes, for a long history) would otherwise be overwritten without a word.
  const latest = await currentPointer(clients, config, init.signal)
  if (latest !== previous && latest !== null && latest !== car.publish && !chain.publishes.includes(latest) && init.force !== true) {
    throw new ImportOlderError(`another device published while the import ran: ${await whyNot(clients, config, latest, car.publish, chain.head.at, fetch)}`)
  }
  const moved = latest !== car.publish
  if (moved) {
    const engine = chain.head.engine === ENGINE_V1 ? ENGINE_V1 : ENGINE
    await clients.pointers.put({ snapshotCid: car.publish, engine, namespace: config.namespace, network: config.network, memories: chain.entries }, { signal: init.signal })
    const now = await currentPointer(clients, config, init.signal)
    if (now !== car.publish) throw new RemoteResponseError({ service: 'pointer service', method: 'GET', url: '/v1/pointers/current' }, `holds ${now ?? 'nothing'} after it was set to ${car.publish}: another device published meanwhile; run \`cidsync import\` again, or let that device's publish stand`)
  }
  failpoint('import:pointer-moved')
  // What the import put on the primary is logged for the mirrors as a publish's objects are (then
  // the pointer move): else a mirror never gets the imported history, yet shows "caught up". Sealed
  // objects are all kubo-cidv1; a plain file of another profile is one the mirror's add refuses,
  // counted there as unavailable.
  repository.store.mirrorLog.logPublish(car.publish, chainObjects.filter(o => o !== car.publish), SNAPSHOT_PROFILE.name)
  return { root: car.root, publish: car.publish, at: chain.head.at, blocks: car.blocks, bytes: car.bytes, objects: car.objects.length, unnamed, publishes: chain.publishes.length, segments: chain.segments, dealsAsked: deals.asked, dealsSkipped: deals.skipped, previous: latest, moved }
}

/**
 * The CAR to `dag/import`: whole, or in parts when it holds more blocks than one request may bring
 * (250,000 on the local service). Parts go one after another; the last pins the root, and the
 * blocks the service read are added up.
 */
async function uploadCar (clients: ServiceClients, init: ImportInit, car: ScannedCar): Promise<CarImported> {
  const parts = car.parts ?? []
  if (parts.length <= 1) return await clients.importCar(init.file, { signal: init.signal, onProgress: (sent, total) => init.onProgress?.({ type: 'import:upload', detail: { sent, total } }) })
  const header = carHeader(CID.parse(car.root))
  const total = parts.reduce((sum, p) => sum + header.byteLength + p.end - p.start, 0)
  let before = 0
  let stats: CarImported['stats'] = { blocks: 0, bytes: 0 }
  let last: CarImported | undefined
  for (const [i, part] of parts.entries()) {
    const pinRoots = i === parts.length - 1
    last = await clients.importCar(init.file, { signal: init.signal, part: { ...part, header, pinRoots }, onProgress: (sent) => init.onProgress?.({ type: 'import:upload', detail: { sent: before + sent, total } }) })
    before += header.byteLength + part.end - part.start
    // A service that does not say for one part is not checked for the whole.
    stats = last.stats === undefined || stats === undefined ? undefined : { blocks: stats.blocks + last.stats.blocks, bytes: stats.bytes + last.stats.bytes }
    failpoint('import:part-uploaded')
  }
  const answer = last as CarImported
  return { roots: answer.roots, stats }
}

/** A CARv1 header naming `root`, for each part of a CAR sent in parts. */
function carHeader (root: CID): Uint8Array {
  const writer = CarBufferWriter.createWriter(new ArrayBuffer(CarBufferWriter.headerLength({ roots: [root] })), { roots: [root] })
  return CarBufferWriter.close(writer, { resize: true })
}

async function currentPointer (clients: ServiceClients, config: Config, signal?: AbortSignal): Promise<string | null> {
  try {
    return (await clients.pointers.current(config.namespace, config.network, { signal })).snapshotCid
  } catch (err) {
    if (err instanceof PointerNotFoundError) return null
    throw err
  }
}

/** Why the pointer is left alone: the CAR is behind it (its root is in the pointer's history), or another line. */
async function whyNot (clients: ServiceClients, config: Config, pointer: string, root: string, rootAt: string, fetch: FetchInit): Promise<string> {
  const kept = new Map<string, string>()
  let behind = false
  let pointerAt = '?'
  try {
    for await (const entry of walkEntries(clients, pointer, { get: c => kept.get(c), put: (c, j) => { kept.set(c, j) } }, fetch)) {
      if (entry.cid === pointer) pointerAt = entry.at
      if (entry.cid === root) { behind = true; break }
    }
  } catch {
    // The pointer's chain cannot be read here (another key, damage): it is not the CAR's, whatever it is.
  }
  const force = 'The pointer was not moved: `cidsync history` shows what it holds; add --force to set it to the CAR\'s publish anyway'
  return behind
    ? `the CAR holds an older publish (${root}, ${rootAt}) than the pointer's (${pointer}, ${pointerAt}): importing it would set the pointer back and drop the publishes made since. ${force}`
    : `the pointer of ${config.namespace} on ${config.network} holds ${pointer}, a publish the CAR's history does not hold (another line of publishes, or one this device cannot read): importing would put the CAR's publish of ${rootAt} in its place. ${force}`
}
