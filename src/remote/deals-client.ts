import { z } from 'zod'
import { personalSign, walletAddress } from '../crypto/index.js'
import type { HttpClient } from './http-client.js'
import { ANSWER_LIMITS } from './body.js'
import { RemoteUnauthorizedError } from '../errors.js'
import { checkedCid } from './cid-text.js'
import { dealStatusSchema } from './schemas.js'
import { epochTime } from './chain-epoch.js'
import type { DealRegistry } from '../store/index.js'

/** A storage deal, whatever field names the service used for it. */
export interface Deal {
  readonly dealId: number | undefined
  /** The deal's id on chain, when the service gives it apart from its own. */
  readonly chainDealId: number | undefined
  readonly provider: string | undefined
  readonly status: string | undefined
  readonly pieceCid: string | undefined
  /** The aggregate (a larger piece) the CID was packed into. */
  readonly aggregateIn: string | undefined
  readonly startEpoch: number | undefined
  readonly endEpoch: number | undefined
  /** When the deal starts and ends: its epochs as times (Filecoin mainnet, 30 s an epoch). */
  readonly startAt: string | undefined
  readonly endAt: string | undefined
  readonly lastUpdate: number | undefined
}

export interface CallOptions { readonly signal?: AbortSignal }

/** `invite`: a self-hosted service's invitation code, sent only when given (production knows none). */
export interface LoginOptions extends CallOptions { readonly invite?: string }

/** The deal service (API keys by signed message, `add_cid`) and deal status on the main API. */
export class DealsClient implements DealRegistry {
  constructor (private readonly components: { readonly deal: HttpClient, readonly api: HttpClient }) {}

  async authMessage (address: string, options: LoginOptions = {}): Promise<string> {
    return await this.components.deal.json({ method: 'GET', path: '/api/v1/user/get_auth_message', query: { publicKey: address, ...inviteQuery(options) }, auth: false, signal: options.signal }, z.string().min(1))
  }

  /** Retried like every call (429, 5xx, network): a message the service failed on is not used up. */
  async createApiKey (address: string, signature: string, options: LoginOptions = {}): Promise<string> {
    return await this.components.deal.json({ method: 'GET', path: '/api/v1/user/create_api_key', query: { publicKey: address, signature, ...inviteQuery(options) }, auth: false, signal: options.signal }, z.string().min(1))
  }

  /**
   * The whole flow: ask for a message, sign it with the wallet key, trade it for an API key. A
   * message is single use, so when a retried exchange is refused (the service used the message
   * but its answer was lost) the flow runs once more with a fresh message.
   */
  async login (walletKey: Uint8Array, options: LoginOptions = {}): Promise<{ address: string, apiKey: string }> {
    const address = walletAddress(walletKey)
    for (let round = 1; ; round++) {
      const message = await this.authMessage(address, options).catch((err: unknown) => { throw signInRefused(err, address) })
      try {
        return { address, apiKey: await this.createApiKey(address, personalSign(message, walletKey), options) }
      } catch (err) {
        if (round >= 2 || !(err instanceof RemoteUnauthorizedError) || err.status === 403) throw signInRefused(err, address)
      }
    }
  }

  /** Asks for a storage deal. Any 2xx is success: production documents no body. */
  async addCid (cid: string, options: CallOptions = {}): Promise<void> {
    const response = await this.components.deal.send({ method: 'GET', path: '/api/v1/pin/add_cid', query: { cid: checkedCid(cid) }, signal: options.signal })
    await response.body.dump()
  }

  /**
   * The deals made for a CID; empty while none is made yet (up to two days in production). The
   * API key goes along: a self-hosted service answers only the account's own deals.
   */
  async dealStatus (cid: string, options: CallOptions = {}): Promise<Deal[]> {
    const deals = await this.components.api.json({ method: 'GET', path: '/api/lighthouse/deal_status', query: { cid: checkedCid(cid) }, maxBytes: ANSWER_LIMITS.deals, signal: options.signal }, dealStatusSchema)
    return deals.map(d => ({
      dealId: d.DealID ?? d.dealId ?? d.chainDealID,
      chainDealId: d.chainDealID,
      provider: d.Provider ?? d.storageProvider ?? d.miner,
      status: d.dealStatus,
      pieceCid: d.pieceCID,
      aggregateIn: d.aggregateIn,
      startEpoch: d.startEpoch,
      endEpoch: d.endEpoch,
      startAt: epochTime(d.startEpoch),
      endAt: epochTime(d.endEpoch),
      lastUpdate: d.lastUpdate
    }))
  }
}

function inviteQuery (options: LoginOptions): { invite?: string } {
  return options.invite === undefined || options.invite === '' ? {} : { invite: options.invite }
}

/**
 * A 403 to the sign-in itself is the service refusing the wallet (a self-hosted service's sign-up
 * closed, or an allowlist without it). The usual hint, "no API key is set: run `cidsync login`",
 * would send the user who just ran it in a circle: say which wallet, and who can let it in.
 */
function signInRefused (err: unknown, address: string): unknown {
  if (!(err instanceof RemoteUnauthorizedError) || err.status !== 403) return err
  return new RemoteUnauthorizedError(err.context, err.status, err.excerpt,
    `this wallet (${address}) may not sign in here: ask the service's operator to let it in (a self-hosted \`cidsync local-service\`: ` +
    `[local_service] signup = "allowlist" with allow = ["${address}"] in its --config; or, with signup = "invite", a code from \`cidsync local-service invite\`, ` +
    'given as `cidsync login --invite CODE`), then run `cidsync login` again')
}
