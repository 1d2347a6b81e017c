/**
 * The local implementation of the service: the embedded default, a self-hosted backend, and the
 * peer every test talks to. Its own world: it uses only `content/` and `crypto/` of the rest.
 */
import { LocalService, type LocalServiceInit } from './local-service.js'
import { openServiceDatabase, settingOr } from './store.js'
import type { ReclaimOptions, ReclaimResult } from './reclaim.js'

export { LocalService, DEFAULT_PAGE_SIZE, DEFAULT_DEAL_DELAY_MS, DEFAULT_AUTH_MESSAGE_TTL_MS } from './local-service.js'
export type { LocalServiceInit } from './local-service.js'
export { ACCESS_HEADER } from './local-service.js'
export { OPEN_POLICY, defaultSignup } from './account-policy.js'
export { DEFAULT_INVITATION_TTL_SECONDS } from './invitations.js'
export { DEFAULT_SESSION_TOKEN_TTL_SECONDS } from './tokens.js'
export type { AccountPolicy, SignupPolicy } from './account-policy.js'
export { DEFAULT_SERVICE_MAX_CONNECTIONS } from './connection-cap.js'
export type { FaultInput, Fault } from './faults.js'
export type { RequestRecord } from './routes/admin.js'
export { CAR_LIMITS } from './routes/gateway-car.js'
export type { CarLimits } from './routes/gateway-car.js'
export { startLocalServiceThread } from './service-thread.js'
export type { ServiceThread, AddFailure } from './service-thread.js'
export type { InProcessAdd, InProcessAdded } from './add-in-process.js'
export type { DeleteWalk, ListedUpload } from './uploads-in-process.js'
export { REPACK_DEAD_SHARE } from './reclaim-packs.js'
export type { ReclaimOptions, ReclaimProgress, ReclaimResult } from './reclaim.js'

/** Opens (creating if need be) the service under `init.dir` and starts listening. */
export async function startLocalService (init: LocalServiceInit): Promise<LocalService> {
  const db = await openServiceDatabase(init.dir)
  let service: LocalService
  try {
    service = new LocalService(init, db)
  } catch (err) {
    db.close()
    throw err
  }
  try {
    await service.start()
  } catch (err) {
    await service.stop()
    throw err
  }
  return service
}

/** An invitation code made in the service's directory, without a running server (as {@link issueTokenFor}). */
export async function inviteFor (dir: string, ttlSeconds?: number): Promise<string> {
  const { Invitations } = await import('./invitations.js')
  const db = await openServiceDatabase(dir)
  try {
    return new Invitations(db).make(ttlSeconds)
  } finally {
    db.close()
  }
}

/**
 * A session token from the service's directory, without a running server (the service may be
 * running beside it: SQLite's WAL lets both read the signing secret).
 */
export async function issueTokenFor (dir: string, user: string, ttlSeconds: number): Promise<string> {
  const { TokenIssuer } = await import('./tokens.js')
  const db = await openServiceDatabase(dir)
  try {
    return new TokenIssuer(Buffer.from(settingOr(db, 'token_secret', TokenIssuer.newSecret), 'base64url')).issue(user, ttlSeconds)
  } finally {
    db.close()
  }
}

/**
 * Whether the service in `dir` has space to reclaim: deleted uploads, or a reclaim cut short. A
 * prune with nothing left to delete reclaims then, so a run killed during the reclaim is finished.
 */
export async function reclaimDueIn (dir: string): Promise<boolean> {
  const { reclaimDue } = await import('./reclaim.js')
  const db = await openServiceDatabase(dir)
  try {
    return reclaimDue(db)
  } finally {
    db.close()
  }
}

/**
 * Reclaims the space of the service in `dir` without a running server (`LocalService.reclaim`):
 * a service may be running on it meanwhile, in another process, and its uploads go on.
 */
export async function reclaimDir (dir: string, options: ReclaimOptions = {}): Promise<ReclaimResult> {
  const [{ BlockStore }, { UploadGate }, { reclaimSpace }] = await Promise.all([import('./blocks.js'), import('./upload-gate.js'), import('./reclaim.js')])
  const db = await openServiceDatabase(dir, options.signal)
  try {
    const blocks = new BlockStore(dir, db)
    const gate = new UploadGate(dir, db)
    try {
      return await reclaimSpace({ dir, db, blocks, gate }, options)
    } finally {
      blocks.close()
      gate.close()
    }
  } finally {
    db.close()
  }
}
