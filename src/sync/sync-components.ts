import type { Logger } from 'pino'
import type { Index } from '../index/index.js'
import type { ServiceClients } from '../remote/index.js'
import type { SyncStore } from './sync-store.js'

/** What every sync operation works with: this device's index and id, the service, the log. */
export interface SyncComponents {
  readonly index: Index
  readonly clients: ServiceClients
  readonly logger: Logger
  readonly deviceId: string
}

/** The same, with the process's sync store: its owner (the daemon, a command) opened it and closes it. */
export interface StoreComponents extends SyncComponents {
  readonly store: SyncStore
}
