import type { Logger } from 'pino'
import type { Index } from '../index/index.js'
import type { ServiceClients } from '../remote/index.js'
import type { ServiceHome } from '../store/index.js'
import type { Repository } from './repository.js'

/**
 * What sync asks of the service: objects, the pointer, names and deals (each behind its
 * interface), the uploads listing with its ids, and a CAR import for a publish's root.
 */
export type SyncService = ServiceHome & Pick<ServiceClients, 'files' | 'importCar'>

/**
 * What every sync operation works with (helia's `(components, init)` shape): this device's index
 * and id, the log, and the repository on the service. The repository holds the service, the
 * config, the passphrase (read once) and the process's sync store. Its owner (the daemon, a
 * command, a test) opened it once and closes it; nothing it is handed to opens or closes one.
 */
export interface SyncComponents {
  readonly index: Index
  readonly logger: Logger
  readonly deviceId: string
  readonly repository: Repository<SyncService>
}
