import { randomBytes, randomUUID } from 'node:crypto'
import type { ServerResponse } from 'node:http'
import { z } from 'zod'
import { recoverSigner } from '../../crypto/index.js'
import { HttpFailure, readJsonBody, requireParam, sendJson, type Route } from '../http.js'
import { DEFAULT_SESSION_TOKEN_TTL_SECONDS } from '../tokens.js'
import type { ServiceParts } from '../parts.js'

const ADDRESS = /^0x[0-9a-fA-F]{40}$/

/**
 * Open sign-in messages kept per wallet: past it the oldest goes. A stranger asking for messages
 * in a victim's name would otherwise make the victim's sign-in check every one of them.
 */
export const OPEN_MESSAGES_PER_ADDRESS = 8
/** Open sign-in messages kept in all: past it requests wait (429) until some expire. */
export const OPEN_MESSAGES_IN_ALL = 10_000

/**
 * What a 401 says, worded as production words it: terse, and the same whether the credential is
 * missing, malformed or unknown (a client must not depend on more).
 */
export const UNAUTHORIZED_MESSAGE = { 'api-key': 'Authentication failed', session: 'Unauthorized' } as const

/** The credential of an `Authorization` header; the scheme's name is case-insensitive (RFC 9110). */
export function bearerToken (header: string | undefined): string | undefined {
  const token = /^bearer[ \t]+(.+)$/i.exec(header ?? '')?.[1]?.trim()
  return token === '' ? undefined : token
}

/** The invitation code a new wallet brings under `signup = "invite"` (not part of production). */
function inviteOf (url: URL): string | undefined {
  const code = url.searchParams.get('invite')
  return code === null || code === '' ? undefined : code
}

/** What the sign-in paths do: a message for a wallet to sign, and an API key or a session token for its signature. */
interface SignIn {
  message: (address: string, invite: string | undefined, res: ServerResponse) => string
  apiKey: (address: string, signature: string, invite: string | undefined) => string
  /** A session token for an account's wallet (a 403 for a wallet without one): sign-up stays with apiKey and its policy. */
  sessionToken: (address: string, signature: string) => { token: string, expiresAt: string }
}

function signIn (parts: ServiceParts): SignIn {
  const { db } = parts
  const insertMessage = db.prepare('INSERT INTO auth_messages (nonce, address, message, expires_at) VALUES (?, ?, ?, ?)')
  const openMessages = db.prepare('SELECT nonce, message FROM auth_messages WHERE address = ? AND used = 0 AND expires_at > ? ORDER BY expires_at DESC').raw()
  const useMessage = db.prepare('UPDATE auth_messages SET used = 1 WHERE nonce = ? AND used = 0')
  const purge = db.prepare('DELETE FROM auth_messages WHERE expires_at <= ? OR used = 1')
  const openCount = db.prepare('SELECT count(*) FROM auth_messages').pluck()
  const dropOldest = db.prepare(`DELETE FROM auth_messages WHERE nonce IN (
    SELECT nonce FROM auth_messages WHERE address = ? ORDER BY expires_at DESC LIMIT -1 OFFSET ?)`)
  const insertKey = db.prepare('INSERT INTO api_keys (key, address, created_at) VALUES (?, ?, ?)')
  const hasAccount = db.prepare('SELECT 1 FROM api_keys WHERE address = ? LIMIT 1').pluck()

  /** Spends the open message `signature` signs for `address`: a 401 when none does. */
  const spendSigned = (address: string, signature: string): void => {
    // At most OPEN_MESSAGES_PER_ADDRESS: the signature is checked against each.
    const candidates = openMessages.all(address, parts.now()) as Array<[string, string]>
    const signed = candidates.find(([, message]) => recoverSigner(message, signature) === address)
    if (signed === undefined) throw new HttpFailure(401, 'invalid signature: request a new message with get_auth_message and sign it')
    if (useMessage.run(signed[0]).changes === 0) throw new HttpFailure(401, 'this message was already used: request a new one')
  }
  return {
    message: (given, invite, res) => {
      if (!ADDRESS.test(given)) throw new HttpFailure(400, 'publicKey must be an address: 0x and 40 hex digits')
      const address = given.toLowerCase()
      // A wallet that may not sign up gets no message either: strangers cannot fill the table with them.
      parts.limits.checkSignup(address, invite)
      const now = parts.now()
      purge.run(now)
      if ((openCount.get() as number) >= OPEN_MESSAGES_IN_ALL) {
        res.setHeader('retry-after', String(Math.ceil(parts.authMessageTtlMs / 1000)))
        throw new HttpFailure(429, 'too many sign-ins are under way: try again later')
      }
      // Production's nonce is a millisecond timestamp; random digits after it keep two in one ms apart.
      const nonce = `${now}${randomBytes(3).readUIntBE(0, 3).toString().padStart(8, '0')}`
      const message = `Please prove you are the owner of this wallet by signing this message, nonce=${nonce}`
      insertMessage.run(nonce, address, message, now + parts.authMessageTtlMs)
      dropOldest.run(address, OPEN_MESSAGES_PER_ADDRESS)
      return message
    },
    apiKey: (given, signature, invite) => {
      const address = given.toLowerCase()
      spendSigned(address, signature)
      const key = randomUUID()
      // One transaction: an invitation is spent only by the key it let in.
      parts.db.transaction(() => {
        parts.limits.checkSignup(address, invite, true)
        insertKey.run(key, address, Date.now())
      }).immediate()
      return key
    },
    sessionToken: (given, signature) => {
      const address = given.toLowerCase()
      if (hasAccount.get(address) === undefined) throw new HttpFailure(403, 'this wallet has no account here: sign in first (`cidsync login`)')
      spendSigned(address, signature)
      // On the clock the token is checked by (the system's), as the admin route issues them.
      const now = Date.now()
      const token = parts.tokens.issue(address, DEFAULT_SESSION_TOKEN_TTL_SECONDS, now)
      return { token, expiresAt: new Date((Math.floor(now / 1000) + DEFAULT_SESSION_TOKEN_TTL_SECONDS) * 1000).toISOString() }
    }
  }
}

/** The body of `create_session_token`. */
const sessionRequest = z.strictObject({ publicKey: z.string().regex(ADDRESS), signature: z.string().min(1).max(200) })

/** The body of the main API's `create_api_key`, as the storage service's SDK sends it. */
const signedBody = z.object({ publicKey: z.string().max(100), signedMessage: z.string().max(1000) })

/**
 * API keys by signed message: a single-use, expiring message per request, checked by recovering
 * its signer. The deal service's paths (`/api/v1/user/...`, GET) and the main API's, which the
 * storage service's SDK uses (`/api/auth/get_message`, then a POST of `{publicKey, signedMessage}`
 * to `/api/auth/create_api_key`), share the messages and make the same keys.
 */
export function authRoutes (parts: ServiceParts): Route[] {
  const sign = signIn(parts)
  return [{
    name: 'get_auth_message',
    methods: ['GET'],
    path: '/api/v1/user/get_auth_message',
    auth: 'none',
    handle: ({ url, res }) => sendJson(res, 200, sign.message(requireParam(url, 'publicKey'), inviteOf(url), res))
  }, {
    name: 'create_api_key',
    methods: ['GET'],
    path: '/api/v1/user/create_api_key',
    auth: 'none',
    handle: ({ url, res }) => sendJson(res, 200, sign.apiKey(requireParam(url, 'publicKey'), requireParam(url, 'signature'), inviteOf(url)))
  }, {
    name: 'auth_get_message',
    methods: ['GET'],
    path: '/api/auth/get_message',
    auth: 'none',
    handle: ({ url, res }) => sendJson(res, 200, sign.message(requireParam(url, 'publicKey'), inviteOf(url), res))
  }, {
    name: 'auth_create_api_key',
    methods: ['POST'],
    path: '/api/auth/create_api_key',
    auth: 'none',
    handle: async ({ req, url, res }) => {
      const body = signedBody.safeParse(await readJsonBody(req, 4096))
      if (!body.success) throw new HttpFailure(400, 'expected a JSON body {"publicKey": "0x...", "signedMessage": "0x..."}')
      sendJson(res, 200, sign.apiKey(body.data.publicKey, body.data.signedMessage, inviteOf(url)))
    }
  }, {
    // Not part of production, where an identity provider issues session tokens. A device renews
    // its own with its wallet's signature, so a self-hosted service needs no operator each month.
    // POST with the signature in the body: a URL is logged and shown in errors, and a signature
    // whose message a failed request left unspent would let a reader sign in as the wallet.
    name: 'create_session_token',
    methods: ['POST'],
    path: '/api/v1/user/create_session_token',
    auth: 'none',
    handle: async ({ req, res }) => {
      const parsed = sessionRequest.safeParse(await readJsonBody(req, 4_096))
      if (!parsed.success) throw new HttpFailure(400, 'expected {"publicKey": "0x and 40 hex digits", "signature": "0x..."}')
      sendJson(res, 200, sign.sessionToken(parsed.data.publicKey, parsed.data.signature))
    }
  }]
}
