import { createHash } from 'node:crypto'
import { CredentialRefusedError, RemoteUnauthorizedError, SessionExpiredError } from '../errors.js'
import { jwtExpiry } from '../util/jwt.js'

/** The credentials as they are now: the gate tells a renewed one from the one that was refused. */
export type CredentialsNow = () => { readonly apiKey: string | undefined, readonly sessionToken: string | undefined }

/**
 * Whether the sync jobs may talk to the service with the credentials they have: a refused one
 * stops every remote job (no retry storm) until it changes, and a session token known to be
 * expired is never sent.
 */
export class CredentialGate {
  private blocked: { reason: string, fingerprint: string } | undefined

  constructor (private readonly credentials: CredentialsNow) {}

  /** Why the jobs are stopped (the refusal's message), or null. */
  get reason (): string | null {
    return this.blocked?.reason ?? null
  }

  /** A job failed: a refused credential stops the remote jobs until it changes. */
  note (err: unknown): void {
    if (err instanceof RemoteUnauthorizedError) this.blocked = { reason: err.message, fingerprint: this.fingerprint() }
  }

  /** Throws while the refused credential is still the one configured; a changed one opens the gate. */
  check (): void {
    if (this.blocked === undefined) return
    if (this.blocked.fingerprint !== this.fingerprint()) {
      this.blocked = undefined
      return
    }
    throw new CredentialRefusedError(`stopped until the credential changes: ${this.blocked.reason}`)
  }

  /** Throws when the session token is known to have expired (publishing needs it; indexing goes on). */
  checkSession (): void {
    const expiry = jwtExpiry(this.credentials().sessionToken)
    if (expiry !== undefined && expiry.getTime() <= Date.now()) {
      throw new SessionExpiredError(`the session token expired at ${expiry.toISOString()}: copy a new one into the session-token credential; publishing waits for it (indexing goes on)`)
    }
  }

  /** The session token is not known to be expired: it may be sent. */
  sessionUsable (): boolean {
    const expiry = jwtExpiry(this.credentials().sessionToken)
    return expiry === undefined || expiry.getTime() > Date.now()
  }

  private fingerprint (): string {
    const { apiKey, sessionToken } = this.credentials()
    return createHash('sha256').update(`${apiKey ?? ''}\n${sessionToken ?? ''}`).digest('hex')
  }
}
