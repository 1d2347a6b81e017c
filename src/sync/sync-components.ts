import type { Logger } from 'pino'
import type { Index } from '../index/index.js'
import type { ServiceClients } from '../remote/index.js'
import type { ServiceHome } from '../store/index.js'
import type { SyncStore } from './state/index.js'

/**
 * What sync asks of the service: objects, the pointer, names and deals (each behind its
 * interface), the uploads listing with its ids, and a CAR import for a publish's root.
 */
export type SyncService = ServiceHome & Pick<ServiceClients, 'files' | 'importCar'>

/**
 * What every sync operation works with (helia's `(components, init)` shape): this device's index
 * and id, the service, the log, and the process's sync store. The store's owner (the daemon, a
 * command, a test) opened it once and closes it; nothing it is handed to opens or closes one.
 */
export interface SyncComponents {
  readonly index: Index
  readonly clients: SyncService
  readonly logger: Logger
  readonly deviceId: string
  readonly store: SyncStore
}

/** The same without the store: what reads the service and writes no sync state (a fresh verify, a merge's fetch). */
export type StatelessComponents = Omit<SyncComponents, 'store'>
