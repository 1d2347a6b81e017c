/**
 * What a command reads of a local service's directory without starting the service: a user's
 * pointer and which uploads an account lists, by the same queries its routes answer from. Apart
 * from the room's face, so that reading them loads none of the service's routes.
 */
export { accountReads, pointerRecord } from './account-reads.js'
export type { AccountReads, PointerRow } from './account-reads.js'
export { openServiceReads } from './service-reads.js'
export type { ServiceReads } from './service-reads.js'
